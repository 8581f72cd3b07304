package toolcatalog

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// TestConcurrentFirstRequestsShareOneBuild: after a change, the callers
// that ask for a view at once share one resolution of it (a List of every
// MCPServer in scope, the menu, its hash), not one each; a caller that
// leaves stops waiting at once, and the build goes on for the others.
func TestConcurrentFirstRequestsShareOneBuild(t *testing.T) {
	scheme := apiScheme(t)
	srv := readyCalc(mcpv1alpha1.Tool{Name: "mcp_calc_add", OriginalName: "add", Hash: "h1",
		InputSchema: k8sruntime.RawExtension{Raw: []byte(`{"type":"object"}`)}})
	var lists atomic.Int64
	release := make(chan struct{})
	reader := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(srv).Build(), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			lists.Add(1)
			<-release
			return c.List(ctx, list, opts...)
		},
	})
	c, err := New(reader, Options{Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}

	const callers = 8
	leaving, leave := context.WithCancel(context.Background())
	left := make(chan error, 1)
	var wg sync.WaitGroup
	tools := make([]int, callers)
	for i := range callers {
		ctx := context.Background()
		if i == 0 {
			ctx = leaving
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			vw, err := c.menus.view(ctx, viewKey{kind: globalView})
			if i == 0 {
				left <- err
			}
			if err == nil {
				tools[i] = len(vw.menu.Tools)
			}
		}()
	}
	leave()
	select {
	case err := <-left:
		if err == nil {
			t.Error("a caller that left got a view")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a caller that left waits for the build it shares")
	}
	// Hold the build until a second one starts (each caller building its
	// own), or long enough for every caller to have asked.
	deadline := time.Now().Add(2 * time.Second)
	for lists.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	if n := lists.Load(); n != 1 {
		t.Errorf("%d concurrent callers resolved the view %d times, want once", callers, n)
	}
	for i, n := range tools[1:] {
		if n != 1 {
			t.Errorf("caller %d got %d tools, want the one the shared build found", i+1, n)
		}
	}
}

// apiScheme knows the operator's kinds, for a fake client.
func apiScheme(t testing.TB) *k8sruntime.Scheme {
	t.Helper()
	scheme := k8sruntime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// readyCalc is the MCPServer team-a/calc, Ready with tools.
func readyCalc(tools ...mcpv1alpha1.Tool) *mcpv1alpha1.MCPServer {
	return &mcpv1alpha1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "calc", Generation: 1},
		Status: mcpv1alpha1.MCPServerStatus{
			Conditions: []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
				ObservedGeneration: 1, Reason: "ToolsDiscovered", LastTransitionTime: metav1.Now()}},
			Tools: tools,
		},
	}
}
