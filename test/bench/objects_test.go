package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// namespace creates a namespace whose MCPServers and ToolCollections are
// deleted when the benchmark ends (envtest runs no namespace controller),
// so that the next benchmark's manager does not see them.
func namespace(b *testing.B, cp *controlPlane, prefix string) string {
	b.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := cp.client.Create(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx := context.Background()
		_ = cp.client.DeleteAllOf(ctx, &mcpv1alpha1.ToolCollection{}, client.InNamespace(ns.Name))
		_ = cp.client.DeleteAllOf(ctx, &mcpv1alpha1.MCPServer{}, client.InNamespace(ns.Name))
	})
	return ns.Name
}

// createServers creates MCPServers in ns, named and pointed at by
// urlOf(i), from a few goroutines as a GitOps tool applying a folder
// would.
func createServers(b *testing.B, cp *controlPlane, ns string, n int, nameOf, urlOf func(int) string, mutate func(*mcpv1alpha1.MCPServer)) {
	b.Helper()
	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				srv := &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: nameOf(i)},
					Spec: mcpv1alpha1.MCPServerSpec{URL: urlOf(i)}}
				if mutate != nil {
					mutate(srv)
				}
				if err := cp.client.Create(context.Background(), srv); err != nil {
					select {
					case errs <- fmt.Errorf("creating MCPServer %s/%s: %w", ns, srv.Name, err):
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// collectionOfAll creates a ToolCollection named name over every MCPServer
// of ns.
func collectionOfAll(b *testing.B, cp *controlPlane, ns, name string) {
	b.Helper()
	tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Selector: &metav1.LabelSelector{}}}}
	if err := cp.client.Create(context.Background(), tc); err != nil {
		b.Fatal(err)
	}
}

// readyWatch follows the MCPServers of a namespace through a watch and
// tells when n of them are Ready for their current generation with the
// expected tool count: polling lists of thousands of objects would load
// the API server and blur the moment. A watch that ends (while thousands
// of objects are created the API server closes it every second or so) is
// taken up again from the last resourceVersion seen, as informers do;
// only one the API server no longer holds is listed again. Listing again
// on every end made 18 lists of up to 5,000 objects while 5,000 servers
// became Ready, about 1 ms of the API server's and this process's CPU per
// server on the cores the manager uses.
type readyWatch struct {
	cp    *controlPlane
	ns    string
	mu    sync.Mutex
	ready map[string]bool
	// state says why each server last seen was not ready, for failures.
	state map[string]string
	want  func(*mcpv1alpha1.MCPServer) bool
	// changed is signalled on every event.
	changed chan struct{}
	stop    context.CancelFunc
}

func watchReady(b *testing.B, cp *controlPlane, ns string, want func(*mcpv1alpha1.MCPServer) bool) *readyWatch {
	b.Helper()
	ctx, stop := context.WithCancel(context.Background())
	rw := &readyWatch{cp: cp, ns: ns, ready: map[string]bool{}, state: map[string]string{}, want: want,
		changed: make(chan struct{}, 1), stop: stop}
	b.Cleanup(stop)
	go rw.follow(ctx)
	return rw
}

func (rw *readyWatch) follow(ctx context.Context) {
	resourceVersion := "" // none: list first
	for ctx.Err() == nil {
		if resourceVersion == "" {
			var list mcpv1alpha1.MCPServerList
			if err := rw.cp.client.List(ctx, &list, client.InNamespace(rw.ns)); err != nil {
				time.Sleep(time.Second)
				continue
			}
			rw.reset(list.Items)
			resourceVersion = list.ResourceVersion
		}
		w, err := rw.cp.client.Watch(ctx, &mcpv1alpha1.MCPServerList{}, client.InNamespace(rw.ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: resourceVersion, AllowWatchBookmarks: true}})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				resourceVersion = ""
			}
			time.Sleep(time.Second)
			continue
		}
		next, events := rw.followWatch(w, resourceVersion)
		w.Stop()
		if events == 0 {
			// A watch that ends with nothing in it (an error the API
			// server repeats) is not taken up again at once.
			time.Sleep(100 * time.Millisecond)
		}
		resourceVersion = next
	}
}

// reset takes a list as what there is: a server deleted while no watch
// was open is no longer counted.
func (rw *readyWatch) reset(items []mcpv1alpha1.MCPServer) {
	rw.mu.Lock()
	rw.ready, rw.state = map[string]bool{}, map[string]string{}
	rw.mu.Unlock()
	for i := range items {
		rw.see(watch.Modified, &items[i])
	}
}

// followWatch sees a watch's events until it ends, and returns the
// resourceVersion to take it up from ("" when the API server no longer
// holds the one it was at) and how many objects and bookmarks it brought.
func (rw *readyWatch) followWatch(w watch.Interface, resourceVersion string) (string, int) {
	events := 0
	for ev := range w.ResultChan() {
		switch srv, ok := ev.Object.(*mcpv1alpha1.MCPServer); {
		case ev.Type == watch.Error:
			if err := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return "", events
			}
		case !ok:
		case ev.Type == watch.Bookmark:
			resourceVersion = srv.ResourceVersion
			events++
		default:
			rw.see(ev.Type, srv)
			resourceVersion = srv.ResourceVersion
			events++
		}
	}
	return resourceVersion, events
}

func (rw *readyWatch) see(event watch.EventType, srv *mcpv1alpha1.MCPServer) {
	rw.mu.Lock()
	rw.ready[srv.Name] = event != watch.Deleted && isReady(srv) && rw.want(srv)
	rw.state[srv.Name] = fmt.Sprintf("generation %d, %d tools, conditions %v", srv.Generation, srv.Status.ToolCount, srv.Status.Conditions)
	rw.mu.Unlock()
	select {
	case rw.changed <- struct{}{}:
	default:
	}
}

func isReady(srv *mcpv1alpha1.MCPServer) bool {
	c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == srv.Generation
}

func (rw *readyWatch) count() int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	n := 0
	for _, r := range rw.ready {
		if r {
			n++
		}
	}
	return n
}

func (rw *readyWatch) notReady() string {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	for name, ready := range rw.ready {
		if !ready {
			return name + " " + rw.state[name]
		}
	}
	return "none seen"
}

// wait returns when n servers are ready, with the moment it saw the last.
func (rw *readyWatch) wait(b *testing.B, n int, timeout time.Duration) time.Time {
	b.Helper()
	deadline := time.After(timeout)
	for {
		if rw.count() >= n {
			return time.Now()
		}
		select {
		case <-rw.changed:
		case <-deadline:
			b.Fatalf("%d of %d MCPServers Ready after %s; one that is not: %s", rw.count(), n, timeout, rw.notReady())
		}
	}
}

// withTools is a readiness predicate: the server lists n tools.
func withTools(n int) func(*mcpv1alpha1.MCPServer) bool {
	return func(s *mcpv1alpha1.MCPServer) bool { return int(s.Status.ToolCount) == n }
}
