package mcpclient

import (
	"net/http"
	"testing"
	"time"
)

// TestSharedPoolsAreBounded: sessions with the same egress policy and
// timeout share a pool; past max distinct ones, a session gets a pool of
// its own, which is not kept (timeouts come from specs, so their number is
// the users').
func TestSharedPoolsAreBounded(t *testing.T) {
	s := &transportShare{byKey: map[transportKey]*http.Transport{}, max: 1}
	first, shared := s.get(nil, time.Second)
	if !shared || first.IdleConnTimeout != sharedIdleTimeout {
		t.Fatalf("the first pool: shared %v, idle timeout %s", shared, first.IdleConnTimeout)
	}
	if again, shared := s.get(nil, time.Second); again != first || !shared {
		t.Error("a session with the same policy and timeout got another pool")
	}
	own, shared := s.get(nil, 2*time.Second)
	if shared || own == first {
		t.Error("past the bound a session was handed a shared pool")
	}
	if len(s.byKey) != 1 {
		t.Errorf("%d pools kept, bound 1", len(s.byKey))
	}
}

// TestIdleConnectionsCloseWithinAMinute: after a burst of calls, the idle
// connections a session's pool keeps close before the minute in which the
// manager is to be back where it was (net/http's default keeps them 90 s).
func TestIdleConnectionsCloseWithinAMinute(t *testing.T) {
	for _, listening := range []bool{false, true} {
		tr := newBaseTransport(nil, nil, time.Second, false, listening)
		if tr.IdleConnTimeout <= 0 || tr.IdleConnTimeout >= time.Minute {
			t.Errorf("listening %v: idle connections kept %s, want less than a minute", listening, tr.IdleConnTimeout)
		}
	}
}
