package toolcatalog

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/menu"
)

func mcpServer(name string, uid types.UID, maxCalls int32) *mcpv1alpha1.MCPServer {
	return &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: uid},
		Spec: mcpv1alpha1.MCPServerSpec{URL: "http://127.0.0.1:1/mcp", MaxConcurrentCalls: ptr.To(maxCalls)}}
}

func TestAdopt(t *testing.T) {
	t.Run("a server the registry lacks is kept", func(t *testing.T) {
		u := newUpstreams(&mcpclient.Pool{})
		up, kept := u.adopt(mcpServer("a", "1", 3), u.deletionCount())
		if !kept || u.get("team/a") != up {
			t.Fatalf("kept %v, the registry holds %p, want the adopted %p", kept, u.get("team/a"), up)
		}
		if up.limit.capacity() != 3 {
			t.Fatalf("capacity %d, want spec.maxConcurrentCalls 3", up.limit.capacity())
		}
	})
	t.Run("the registry's own entry wins", func(t *testing.T) {
		u := newUpstreams(&mcpclient.Pool{})
		u.observe(mcpServer("a", "1", 3))
		observed := u.get("team/a")
		if up, _ := u.adopt(mcpServer("a", "1", 5), u.deletionCount()); up != observed {
			t.Fatalf("adopt returned %p, want the observed %p", up, observed)
		}
		if u.get("team/a") != observed {
			t.Fatal("adopt replaced what observe recorded")
		}
	})
	t.Run("the informer's later delivery keeps the adopted limiter", func(t *testing.T) {
		// Else calls holding the adopted limiter's slots and calls taking
		// the new one's would together run twice maxConcurrentCalls.
		u := newUpstreams(&mcpclient.Pool{})
		adopted, _ := u.adopt(mcpServer("a", "1", 3), u.deletionCount())
		u.observe(mcpServer("a", "1", 3))
		if u.get("team/a").limit != adopted.limit {
			t.Fatal("observe replaced the adopted server's limiter")
		}
	})
	t.Run("a read that may predate a deletion serves one call and is not kept", func(t *testing.T) {
		u := newUpstreams(&mcpclient.Pool{})
		before := u.deletionCount()
		u.observe(mcpServer("a", "1", 3))
		u.forget("team/a") // the informer delivered the deletion meanwhile
		up, kept := u.adopt(mcpServer("a", "1", 3), before)
		if kept || up == nil || up.limit == nil || up.key != "team/a" {
			t.Fatalf("adopt returned %+v, kept %v; want a usable upstream, not kept", up, kept)
		}
		if got := u.get("team/a"); got != nil {
			t.Fatalf("the registry kept a server read before its deletion: %+v", got)
		}
	})
	t.Run("a deletion of another server also keeps the read out", func(t *testing.T) {
		u := newUpstreams(&mcpclient.Pool{})
		before := u.deletionCount()
		u.observe(mcpServer("b", "2", 3))
		u.forget("team/b")
		if _, kept := u.adopt(mcpServer("a", "1", 3), before); kept || u.get("team/a") != nil {
			t.Fatal("kept across a deletion")
		}
		if _, kept := u.adopt(mcpServer("a", "1", 3), u.deletionCount()); !kept || u.get("team/a") == nil {
			t.Fatal("a read counted after the deletion is not kept")
		}
	})
}

// scriptedReader answers Get with each read's step in turn: during() runs
// while the read is under way (a deletion the informer handles then, a
// caller who leaves), and the read fails with err, or returns srv, or
// NotFound when srv is nil.
type scriptedReader struct {
	client.Reader
	steps []readStep
	reads int
}

type readStep struct {
	during func()
	err    error
	srv    *mcpv1alpha1.MCPServer
}

func (r *scriptedReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	step := r.steps[min(r.reads, len(r.steps)-1)]
	r.reads++
	if step.during != nil {
		step.during()
	}
	if step.err != nil {
		return step.err
	}
	if step.srv == nil {
		return apierrors.NewNotFound(mcpv1alpha1.GroupVersion.WithResource("mcpservers").GroupResource(), key.Name)
	}
	*obj.(*mcpv1alpha1.MCPServer) = *step.srv
	return nil
}

func TestUpstreamFromCache(t *testing.T) {
	entry := &menu.Entry{Namespace: "team", Server: "a"}
	a := mcpServer("a", "1", 3)
	tests := []struct {
		name      string
		steps     func(u *upstreams) []readStep
		wantReads int
		wantGone  bool
		wantKept  bool
	}{{
		name:      "a server the registry lacks is read once and kept",
		steps:     func(*upstreams) []readStep { return []readStep{{srv: a}} },
		wantReads: 1, wantKept: true,
	}, {
		name: "deleted while it was read: read again, and gone",
		steps: func(u *upstreams) []readStep {
			return []readStep{{during: func() { u.observe(a); u.forget("team/a") }, srv: a}, {srv: nil}}
		},
		wantReads: 2, wantGone: true,
	}, {
		name: "another server deleted while it was read: read again, and kept",
		steps: func(u *upstreams) []readStep {
			return []readStep{{during: func() { u.forget("team/other") }, srv: a}, {srv: a}}
		},
		wantReads: 2, wantKept: true,
	}, {
		name: "deletions that never pause: this call goes out with what it read, not kept",
		steps: func(u *upstreams) []readStep {
			return []readStep{{during: func() { u.forget("team/other") }, srv: a}}
		},
		wantReads: maxCacheReads,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUpstreams(&mcpclient.Pool{})
			reader := &scriptedReader{}
			reader.steps = tt.steps(u)
			c := &Catalog{reader: reader, upstreams: u, log: logr.Discard()}
			up, err := c.upstreamFromCache(context.Background(), entry.Namespace, entry.Server)
			if reader.reads != tt.wantReads {
				t.Errorf("read the cache %d times, want %d", reader.reads, tt.wantReads)
			}
			if tt.wantGone {
				if err == nil || err.Error() != "MCPServer team/a is gone" {
					t.Fatalf("err %v, want the server gone", err)
				}
				if u.get("team/a") != nil {
					t.Fatal("a deleted server was kept")
				}
				return
			}
			if err != nil || up == nil || up.server.UID != "1" {
				t.Fatalf("got %+v, %v; want the server as read", up, err)
			}
			if kept := u.get("team/a") == up; kept != tt.wantKept {
				t.Fatalf("kept %v, want %v", kept, tt.wantKept)
			}
		})
	}
}

func TestUpstreamFromCacheFailures(t *testing.T) {
	entry := &menu.Entry{Namespace: "team", Name: "mcp_a_add", Server: "a"}
	notSynced := errors.New("failed waiting for *v1alpha1.MCPServer Informer to sync")
	t.Run("a caller who left during the read is told so, not 502", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		left := errors.New("the caller went away")
		reader := &scriptedReader{steps: []readStep{{during: func() { cancel(left) }, err: notSynced}}}
		c := &Catalog{reader: reader, upstreams: newUpstreams(&mcpclient.Pool{}), log: logr.Discard()}
		_, err := c.upstreamFromCache(ctx, entry.Namespace, entry.Server)
		var upErr *upstreamError
		if !errors.As(err, &upErr) || upErr.code != http.StatusGatewayTimeout || upErr.kind != "Canceled" || !errors.Is(upErr.err, left) {
			t.Fatalf("err %#v, want 504 Canceled with the context's cause", err)
		}
	})
	t.Run("another failure is 502 without its text, which goes to the log", func(t *testing.T) {
		var logged []string
		log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
		reader := &scriptedReader{steps: []readStep{{err: notSynced}}}
		c := &Catalog{reader: reader, upstreams: newUpstreams(&mcpclient.Pool{}), log: log}
		_, err := c.upstreamFromCache(context.Background(), entry.Namespace, entry.Server)
		var upErr *upstreamError
		if !errors.As(err, &upErr) || upErr.code != http.StatusBadGateway || upErr.kind != "Internal" || err.Error() != "reading the server failed" {
			t.Fatalf("err %#v, want 502 Internal, reading the server failed", err)
		}
		if len(logged) != 1 || !strings.Contains(logged[0], notSynced.Error()) || !strings.Contains(logged[0], `"server"="team/a"`) {
			t.Fatalf("logged %q, want the read's error and the server", logged)
		}
	})
}
