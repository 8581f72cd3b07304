package cachepolicy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	ctrl "sigs.k8s.io/controller-runtime"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// decoded is obj as an informer decodes it: JSON read by the API
// machinery's deserializer, whose lists grow as they are read.
func decoded[T runtime.Object](t *testing.T, obj T) T {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	gvk := mcpv1alpha1.GroupVersion.WithKind(reflect.TypeOf(obj).Elem().Name())
	out, _, err := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode(raw, &gvk, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out.(T)
}

// fleetObjects are an MCPServer and a ToolCollection with managedFields and
// 20 entries in each list the cache keeps at its length.
func fleetObjects() (*mcpv1alpha1.MCPServer, *mcpv1alpha1.ToolCollection) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	server := &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: managed}}
	collection := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: managed}}
	for i := range 20 {
		name := fmt.Sprintf("mcp_s_t%02d", i)
		server.Status.Tools = append(server.Status.Tools, mcpv1alpha1.Tool{Name: name, OriginalName: name[6:], Description: "does " + name})
		collection.Status.Tools = append(collection.Status.Tools, mcpv1alpha1.CollectionTool{Name: name})
		collection.Status.Conflicts = append(collection.Status.Conflicts, mcpv1alpha1.ToolConflict{Name: name})
		collection.Status.UnapprovedTools = append(collection.Status.UnapprovedTools, mcpv1alpha1.UnapprovedTool{Name: name})
	}
	return server, collection
}

// list is one list the cache keeps at its length.
type list struct {
	name string
	get  func() (data unsafe.Pointer, length, capacity int)
}

func listOf[T any](name string, s *[]T) list {
	return list{name, func() (unsafe.Pointer, int, int) { return unsafe.Pointer(unsafe.SliceData(*s)), len(*s), cap(*s) }}
}

func TestTheCacheKeepsToolListsAtTheirLength(t *testing.T) {
	server, collection := fleetObjects()
	gotServer, gotCollection := decoded(t, server), decoded(t, collection)
	lists := []list{
		listOf("MCPServer status.tools", &gotServer.Status.Tools),
		listOf("ToolCollection status.tools", &gotCollection.Status.Tools),
		listOf("ToolCollection status.conflicts", &gotCollection.Status.Conflicts),
		listOf("ToolCollection status.unapprovedTools", &gotCollection.Status.UnapprovedTools),
	}
	before := make([]unsafe.Pointer, len(lists))
	for i, l := range lists {
		data, n, c := l.get()
		if c == n {
			t.Fatalf("%s: the decoder left no spare capacity (%d): this test no longer shows what it should", l.name, c)
		}
		before[i] = data
	}

	var opts ctrl.Options
	Apply(&opts)
	for _, obj := range []any{gotServer, gotCollection} {
		if out, err := opts.Cache.DefaultTransform(obj); err != nil || out != obj {
			t.Fatalf("the cache's transform: %v, and the object given back is the one given: %t", err, out == obj)
		}
	}
	for i, l := range lists {
		data, n, c := l.get()
		if n != 20 || c != 20 || data == before[i] {
			t.Errorf("%s: length %d, capacity %d, the decoded array kept: %t; want 20, 20 and a new array", l.name, n, c, data == before[i])
		}
		before[i] = data
	}
	server.ManagedFields, collection.ManagedFields = nil, nil
	if !reflect.DeepEqual(gotServer, server) {
		t.Errorf("MCPServer changed beyond its managedFields:\n got %+v\nwant %+v", gotServer, server)
	}
	if !reflect.DeepEqual(gotCollection, collection) {
		t.Errorf("ToolCollection changed beyond its managedFields:\n got %+v\nwant %+v", gotCollection, collection)
	}

	// client-go may transform an object twice: the second time changes
	// nothing.
	for _, obj := range []any{gotServer, gotCollection} {
		if _, err := opts.Cache.DefaultTransform(obj); err != nil {
			t.Fatal(err)
		}
	}
	for i, l := range lists {
		if data, _, _ := l.get(); data != before[i] {
			t.Errorf("%s: a second transform copied it again", l.name)
		}
	}
}

func TestTheCacheDropsManagedFieldsOfEveryObject(t *testing.T) {
	var opts ctrl.Options
	Apply(&opts)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}}
	out, err := opts.Cache.DefaultTransform(pod)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*corev1.Pod); got.ManagedFields != nil || got.Name != "p" {
		t.Errorf("pod after the transform: name %q, managedFields %v; want p and none", got.Name, got.ManagedFields)
	}
}
