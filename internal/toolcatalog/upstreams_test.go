package toolcatalog

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

func mcpServer(name string, uid types.UID, maxCalls int32) *mcpv1alpha1.MCPServer {
	return &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: uid},
		Spec: mcpv1alpha1.MCPServerSpec{URL: "http://127.0.0.1:1/mcp", MaxConcurrentCalls: ptr.To(maxCalls)}}
}

func TestAdopt(t *testing.T) {
	t.Run("a server the registry lacks is kept", func(t *testing.T) {
		u := newUpstreams()
		up := u.adopt(mcpServer("a", "1", 3), u.forgottenCount())
		if got := u.get("team/a"); got != up {
			t.Fatalf("the registry holds %p, want the adopted %p", got, up)
		}
		if up.limit.capacity() != 3 {
			t.Fatalf("capacity %d, want spec.maxConcurrentCalls 3", up.limit.capacity())
		}
	})
	t.Run("the registry's own entry wins", func(t *testing.T) {
		u := newUpstreams()
		u.observe(mcpServer("a", "1", 3))
		observed := u.get("team/a")
		if up := u.adopt(mcpServer("a", "1", 5), u.forgottenCount()); up != observed {
			t.Fatalf("adopt returned %p, want the observed %p", up, observed)
		}
		if u.get("team/a") != observed {
			t.Fatal("adopt replaced what observe recorded")
		}
	})
	t.Run("a read that may predate a deletion serves one call and is not kept", func(t *testing.T) {
		u := newUpstreams()
		before := u.forgottenCount()
		u.observe(mcpServer("a", "1", 3))
		u.forget("team/a") // the informer delivered the deletion meanwhile
		up := u.adopt(mcpServer("a", "1", 3), before)
		if up == nil || up.limit == nil || up.key != "team/a" {
			t.Fatalf("adopt returned %+v, want a usable upstream", up)
		}
		if got := u.get("team/a"); got != nil {
			t.Fatalf("the registry kept a server read before its deletion: %+v", got)
		}
	})
	t.Run("a deletion of another server also keeps the read out", func(t *testing.T) {
		u := newUpstreams()
		before := u.forgottenCount()
		u.observe(mcpServer("b", "2", 3))
		u.forget("team/b")
		u.adopt(mcpServer("a", "1", 3), before)
		if u.get("team/a") != nil {
			t.Fatal("kept across a deletion")
		}
		u.adopt(mcpServer("a", "1", 3), u.forgottenCount())
		if u.get("team/a") == nil {
			t.Fatal("a read taken after the deletion is kept")
		}
	})
}
