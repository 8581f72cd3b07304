package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
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
// server on the cores the manager uses. For the same reason it decodes
// only what readiness reads (serverReadiness).
type readyWatch struct {
	// client reaches the API server with the admin's credentials: list
	// and watch are plain GETs decoded into serverReadiness.
	client *http.Client
	url    string
	mu     sync.Mutex
	// tools is how many tools a server must list to count as ready.
	tools int
	ready map[string]bool
	// state says why each server last seen was not ready, for failures.
	state map[string]*serverReadiness
	// changed is signalled on every event.
	changed chan struct{}
	stop    context.CancelFunc
}

// serverReadiness is what the readiness watch reads of an MCPServer.
// Decoding whole objects, twenty tool definitions each, was a tenth of
// this process's CPU while 5,000 servers became Ready.
type serverReadiness struct {
	Metadata struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
		Generation      int64  `json:"generation"`
	} `json:"metadata"`
	Status struct {
		ToolCount  int32 `json:"toolCount"`
		Conditions []struct {
			Type               string `json:"type"`
			Status             string `json:"status"`
			ObservedGeneration int64  `json:"observedGeneration"`
			Reason             string `json:"reason"`
			Message            string `json:"message"`
		} `json:"conditions"`
	} `json:"status"`
}

// isReady is Ready=True for the object's generation, listing tools tools.
func (s *serverReadiness) isReady(tools int) bool {
	if int(s.Status.ToolCount) != tools {
		return false
	}
	for _, c := range s.Status.Conditions {
		if c.Type == mcpv1alpha1.ConditionReady {
			return c.Status == string(metav1.ConditionTrue) && c.ObservedGeneration == s.Metadata.Generation
		}
	}
	return false
}

func (s *serverReadiness) String() string {
	return fmt.Sprintf("generation %d, %d tools, conditions %+v", s.Metadata.Generation, s.Status.ToolCount, s.Status.Conditions)
}

// watchReady follows ns's MCPServers; a server counts as ready once it is
// Ready for its generation and lists tools tools.
func watchReady(b *testing.B, cp *controlPlane, ns string, tools int) *readyWatch {
	b.Helper()
	hc, err := rest.HTTPClientFor(cp.env.Config)
	if err != nil {
		b.Fatal(err)
	}
	host, _, err := rest.DefaultServerUrlFor(cp.env.Config)
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	rw := &readyWatch{client: hc, tools: tools, ready: map[string]bool{}, state: map[string]*serverReadiness{},
		url: host.JoinPath("apis", mcpv1alpha1.GroupVersion.Group, mcpv1alpha1.GroupVersion.Version,
			"namespaces", ns, "mcpservers").String(),
		changed: make(chan struct{}, 1), stop: stop}
	b.Cleanup(stop)
	go rw.follow(ctx)
	return rw
}

func (rw *readyWatch) follow(ctx context.Context) {
	resourceVersion := "" // none: list first
	for ctx.Err() == nil {
		if resourceVersion == "" {
			var err error
			if resourceVersion, err = rw.list(ctx); err != nil {
				time.Sleep(time.Second)
				continue
			}
		}
		next, events, err := rw.watchFrom(ctx, resourceVersion)
		switch {
		case err != nil:
			time.Sleep(time.Second)
		case events == 0:
			// A watch that ends with nothing in it (an error the API
			// server repeats) is not taken up again at once.
			time.Sleep(100 * time.Millisecond)
		}
		resourceVersion = next
	}
}

// get sends a GET to the servers' collection with query, and returns the
// answer's body when the API server answered 200, or its status code.
func (rw *readyWatch) get(ctx context.Context, query url.Values) (io.ReadCloser, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rw.url+"?"+query.Encode(), nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := rw.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, resp.StatusCode, fmt.Errorf("GET %s: %s", rw.url, resp.Status)
	}
	return resp.Body, resp.StatusCode, nil
}

// list takes a list as what there is (a server deleted while no watch was
// open is no longer counted) and returns its resourceVersion.
func (rw *readyWatch) list(ctx context.Context) (string, error) {
	body, _, err := rw.get(ctx, url.Values{})
	if err != nil {
		return "", err
	}
	defer body.Close()
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []*serverReadiness `json:"items"`
	}
	if err := json.NewDecoder(body).Decode(&list); err != nil {
		return "", err
	}
	rw.mu.Lock()
	rw.ready, rw.state = map[string]bool{}, map[string]*serverReadiness{}
	rw.mu.Unlock()
	for _, srv := range list.Items {
		rw.see(watch.Modified, srv)
	}
	return list.Metadata.ResourceVersion, nil
}

// watchFrom sees a watch's events until it ends, and returns the
// resourceVersion to take it up from ("" when the API server no longer
// holds the one it was at, which it says with a 410 or an ERROR event)
// and how many objects and bookmarks it brought. The error is one that
// is not the watch's end.
func (rw *readyWatch) watchFrom(ctx context.Context, resourceVersion string) (string, int, error) {
	body, status, err := rw.get(ctx, url.Values{"watch": {"true"}, "resourceVersion": {resourceVersion},
		"allowWatchBookmarks": {"true"}})
	if status == http.StatusGone {
		return "", 0, nil
	}
	if err != nil {
		return resourceVersion, 0, err
	}
	defer body.Close()
	events := 0
	dec := json.NewDecoder(body)
	for {
		var ev struct {
			Type   watch.EventType `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || ctx.Err() != nil {
				// The API server closed the watch (between events or,
				// cut short, within one: either way it is taken up
				// again at once), or the benchmark is over.
				err = nil
			}
			return resourceVersion, events, err
		}
		if ev.Type == watch.Error {
			var st metav1.Status
			if err := json.Unmarshal(ev.Object, &st); err != nil {
				return resourceVersion, events, err
			}
			if err := apierrors.FromObject(&st); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return "", events, nil
			}
			continue
		}
		srv := &serverReadiness{}
		if err := json.Unmarshal(ev.Object, srv); err != nil {
			return resourceVersion, events, err
		}
		if ev.Type != watch.Bookmark {
			rw.see(ev.Type, srv)
		}
		resourceVersion = srv.Metadata.ResourceVersion
		events++
	}
}

func (rw *readyWatch) see(event watch.EventType, srv *serverReadiness) {
	rw.mu.Lock()
	rw.ready[srv.Metadata.Name] = event != watch.Deleted && srv.isReady(rw.tools)
	rw.state[srv.Metadata.Name] = srv
	rw.mu.Unlock()
	select {
	case rw.changed <- struct{}{}:
	default:
	}
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
			return name + " " + rw.state[name].String()
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
