package cachepolicy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// decoded is obj after a JSON round trip, as an informer decodes it: the
// decoder grows lists by doubling.
func decoded[T any](t *testing.T, obj *T) *T {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTheCacheKeepsToolListsAtTheirLength(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	server := &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: managed}}
	collection := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: managed}}
	for i := range 20 {
		name := fmt.Sprintf("mcp_s_t%02d", i)
		server.Status.Tools = append(server.Status.Tools, mcpv1alpha1.Tool{Name: name, OriginalName: name[6:], Description: "does " + name})
		collection.Status.Tools = append(collection.Status.Tools, mcpv1alpha1.CollectionTool{Name: name})
	}
	gotServer, gotCollection := decoded(t, server), decoded(t, collection)
	if cap(gotServer.Status.Tools) == 20 || cap(gotCollection.Status.Tools) == 20 {
		t.Fatalf("the decoder left capacities %d and %d: this test no longer shows what it should",
			cap(gotServer.Status.Tools), cap(gotCollection.Status.Tools))
	}
	for _, obj := range []any{gotServer, gotCollection} {
		out, err := transform(obj)
		if err != nil {
			t.Fatal(err)
		}
		if out != obj {
			t.Errorf("transform returned another object than it was given")
		}
	}
	if n, c := len(gotServer.Status.Tools), cap(gotServer.Status.Tools); n != 20 || c != 20 {
		t.Errorf("MCPServer status.tools: length %d, capacity %d; want 20 and 20", n, c)
	}
	if n, c := len(gotCollection.Status.Tools), cap(gotCollection.Status.Tools); n != 20 || c != 20 {
		t.Errorf("ToolCollection status.tools: length %d, capacity %d; want 20 and 20", n, c)
	}
	server.ManagedFields, collection.ManagedFields = nil, nil
	if !reflect.DeepEqual(gotServer, server) {
		t.Errorf("MCPServer changed beyond its managedFields:\n got %+v\nwant %+v", gotServer, server)
	}
	if !reflect.DeepEqual(gotCollection, collection) {
		t.Errorf("ToolCollection changed beyond its managedFields:\n got %+v\nwant %+v", gotCollection, collection)
	}
}

func TestTheCacheDropsManagedFieldsOfEveryObject(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}}
	out, err := transform(pod)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*corev1.Pod); got.ManagedFields != nil || got.Name != "p" {
		t.Errorf("pod after the transform: name %q, managedFields %v; want p and none", got.Name, got.ManagedFields)
	}
}
