// Package v1alpha1 holds the mcp.toolmesh.io/v1alpha1 API: MCPServer, which
// points at one MCP server and publishes its tools in status, and
// ToolCollection, which assembles the menu one agent is given.
//
// +kubebuilder:object:generate=true
// +groupName=mcp.toolmesh.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "mcp.toolmesh.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
