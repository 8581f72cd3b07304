// Package v1alpha1 holds the mcp.toolmesh.io/v1alpha1 API: MCPServer, which
// points at one MCP server and publishes its tools in status, and
// ToolCollection, which assembles the menu one agent is given.
//
// +kubebuilder:object:generate=true
// +groupName=mcp.toolmesh.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "mcp.toolmesh.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&MCPServer{}, &MCPServerList{},
		&ToolCollection{}, &ToolCollectionList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
