package toolcatalog

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// menuFixture is a catalog over one Ready server whose tools a test can
// change, counting the Lists that building its global view costs.
type menuFixture struct {
	t       *testing.T
	catalog *Catalog
	reader  client.Client
	handler http.Handler
	lists   atomic.Int64
	// onList runs once, after the next List has read the servers.
	onList atomic.Pointer[func()]
}

func newMenuFixture(t *testing.T) *menuFixture {
	scheme := apiScheme(t)
	srv := readyCalc()
	tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "calc"},
		Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"calc"}}}}
	f := &menuFixture{t: t}
	base := fake.NewClientBuilder().WithScheme(scheme).WithObjects(srv, tc).WithStatusSubresource(srv).Build()
	f.reader = interceptor.NewClient(base, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			f.lists.Add(1)
			err := c.List(ctx, list, opts...)
			if hook := f.onList.Swap(nil); hook != nil {
				(*hook)()
			}
			return err
		},
	})
	c, err := New(f.reader, Options{Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	f.catalog, f.handler = c, c.Handler()
	f.addTool("add")
	return f
}

// addTool gives the server another tool, as discovery would, and moves the
// catalog's versions as its informer would.
func (f *menuFixture) addTool(name string) {
	f.t.Helper()
	var srv mcpv1alpha1.MCPServer
	if err := f.reader.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "calc"}, &srv); err != nil {
		f.t.Fatal(err)
	}
	srv.Status.Tools = append(srv.Status.Tools, mcpv1alpha1.Tool{Name: "mcp_calc_" + name, OriginalName: name, Hash: name,
		InputSchema: k8sruntime.RawExtension{Raw: []byte(`{"type":"object"}`)}})
	if err := f.reader.Status().Update(context.Background(), &srv); err != nil {
		f.t.Fatal(err)
	}
	f.catalog.serverChanged()
}

// menu reads the global menu gzipped, as Go's and most HTTP clients ask.
func (f *menuFixture) menu() string {
	f.t.Helper()
	return f.read("/v1/tools")
}

// read reads a menu gzipped.
func (f *menuFixture) read(path string) string {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		f.t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		f.t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		f.t.Fatal(err)
	}
	return string(body)
}

// kept is the global menu's openai rendering the cache holds at the
// catalog's version, if any.
func (f *menuFixture) kept() *rendered {
	m := f.catalog.menus
	m.mu.Lock()
	defer m.mu.Unlock()
	m.current()
	return m.renders[renderKey{view: viewKey{kind: globalView}, format: formatOpenAI}]
}

// TestWarmPreparesWhatCallersRead: after a change, the menu callers read
// before it is built, rendered and compressed before the next caller asks,
// who is then answered without a build; a menu nobody read since the last
// change is left alone.
func TestWarmPreparesWhatCallersRead(t *testing.T) {
	f := newMenuFixture(t)
	ctx := context.Background()
	if body := f.menu(); !strings.Contains(body, "mcp_calc_add") {
		t.Fatalf("menu before the change: %s", body)
	}

	f.addTool("sub")
	before := f.lists.Load()
	f.catalog.menus.warm(ctx)
	if f.lists.Load() != before+1 {
		t.Fatalf("warm listed servers %d times, want once", f.lists.Load()-before)
	}
	r := f.kept()
	if r == nil || !bytes.Contains(r.body, []byte("mcp_calc_sub")) {
		t.Fatal("after warm the cache holds no current rendering of the menu read before the change")
	}
	if r.gzipped == nil {
		t.Error("the menu was read gzipped before the change, and warm did not compress its new rendering")
	}
	built := f.lists.Load()
	if body := f.menu(); !strings.Contains(body, "mcp_calc_sub") {
		t.Fatalf("menu after warm: %s", body)
	}
	if f.lists.Load() != built {
		t.Error("the first caller after warm built the menu again")
	}

	// Read after the last change: prepared again after the next one.
	f.addTool("mul")
	f.catalog.menus.warm(ctx)
	if r := f.kept(); r == nil || !bytes.Contains(r.body, []byte("mcp_calc_mul")) {
		t.Fatal("a menu read since the last change was not prepared after the next")
	}
	// Not read since: left for its next caller.
	f.addTool("div")
	before = f.lists.Load()
	f.catalog.menus.warm(ctx)
	if f.lists.Load() != before || f.kept() != nil {
		t.Error("warm prepared a menu nobody read since the last change")
	}
	if body := f.menu(); !strings.Contains(body, "mcp_calc_div") {
		t.Fatalf("menu read after an unprepared change: %s", body)
	}
}

// TestWarmInterruptedByAChangeTriesAgain: a change that lands while warm
// builds makes what it prepares stale; the next warm prepares what callers
// wanted at the newer version.
func TestWarmInterruptedByAChangeTriesAgain(t *testing.T) {
	f := newMenuFixture(t)
	ctx := context.Background()
	f.menu()
	f.addTool("sub")
	change := func() { f.addTool("mul") }
	f.onList.Store(&change)
	f.catalog.menus.warm(ctx)
	if f.onList.Load() != nil {
		t.Fatal("warm did not list the servers")
	}
	f.catalog.menus.warm(ctx)
	if r := f.kept(); r == nil || !bytes.Contains(r.body, []byte("mcp_calc_mul")) {
		t.Error("the warm after an interrupted one did not prepare the menu read before both")
	}
}

// TestWarmLetsGoOfAMenuNobodyReads: when changes keep interrupting warms
// and nobody reads the menu meanwhile, it is prepared warmTries times at
// most, then left for its next caller.
func TestWarmLetsGoOfAMenuNobodyReads(t *testing.T) {
	f := newMenuFixture(t)
	ctx := context.Background()
	f.menu()
	for i := range warmTries {
		f.addTool(fmt.Sprintf("t%d", i))
		change := func() { f.addTool(fmt.Sprintf("u%d", i)) }
		f.onList.Store(&change)
		f.catalog.menus.warm(ctx)
		if f.onList.Load() != nil {
			t.Fatalf("warm %d did not build the menu", i+1)
		}
	}
	lists := f.lists.Load()
	f.catalog.menus.warm(ctx)
	if f.lists.Load() != lists {
		t.Errorf("after %d interrupted warms with no caller, the menu was built again", warmTries)
	}
}

// TestACollectionChangeKeepsTheGlobalMenu: the global menu reads only
// MCPServers, so a change to a ToolCollection (its status follows every
// change to its servers) leaves it built and rendered, and drops only the
// collections' menus; a change to an MCPServer drops both.
func TestACollectionChangeKeepsTheGlobalMenu(t *testing.T) {
	f := newMenuFixture(t)
	const collection = "/v1/namespaces/team-a/toolcollections/calc/tools"
	f.menu()
	f.read(collection)
	lists := f.lists.Load()

	f.catalog.changed() // a ToolCollection changed
	if body := f.menu(); !strings.Contains(body, "mcp_calc_add") {
		t.Fatalf("global menu after a collection changed: %s", body)
	}
	if f.lists.Load() != lists {
		t.Error("a change to a ToolCollection had the global menu built again")
	}
	f.read(collection)
	if f.lists.Load() != lists+1 {
		t.Errorf("the collection's menu was listed %d times after its change, want once", f.lists.Load()-lists)
	}

	f.addTool("sub")
	if body := f.menu(); !strings.Contains(body, "mcp_calc_sub") {
		t.Errorf("global menu after a server changed: %s", body)
	}
	if body := f.read(collection); !strings.Contains(body, "mcp_calc_sub") {
		t.Errorf("collection's menu after a server changed: %s", body)
	}
}

// TestAGlobalBuildOvertakenByACollectionChangeIsKept: a collection's
// change while the global menu is being built (a collection's status
// write follows every change to its servers) neither throws the build
// away nor has the menu built again.
func TestAGlobalBuildOvertakenByACollectionChangeIsKept(t *testing.T) {
	f := newMenuFixture(t)
	const collection = "/v1/namespaces/team-a/toolcollections/calc/tools"
	f.menu()
	f.addTool("sub")
	lists := f.lists.Load()
	var midBuild int
	overtake := func() {
		// Mid-build: a ToolCollection changes, and a caller reads it. (On
		// the build's goroutine: a failure is noted, not fatal, so that
		// the build still answers.)
		f.catalog.changed()
		rec := httptest.NewRecorder()
		f.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, collection, nil))
		midBuild = rec.Code
	}
	f.onList.Store(&overtake)
	for range 2 {
		if body := f.menu(); !strings.Contains(body, "mcp_calc_sub") {
			t.Fatalf("global menu after a server changed: %s", body)
		}
	}
	if midBuild != http.StatusOK {
		t.Fatalf("the collection's menu read during the build: %d", midBuild)
	}
	if got := f.lists.Load() - lists; got != 2 {
		t.Errorf("%d Lists after the change, want two: the global menu's and the collection's", got)
	}
}
