package controller

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// sessionPool holds the long-lived sessions of servers that announce
// tools.listChanged, so that their notifications arrive between refreshes.
// A session is keyed by object and by a fingerprint of its endpoint: a spec
// or Secret change makes a new fingerprint, which closes the old session.
type sessionPool struct {
	mu       sync.Mutex
	sessions map[types.NamespacedName]pooledSession
	// notify asks for a reconcile of the object: its tools changed, or its
	// session was lost.
	notify func(types.NamespacedName)
}

type pooledSession struct {
	fingerprint string
	session     *mcpclient.Session
}

func newSessionPool(notify func(types.NamespacedName)) *sessionPool {
	return &sessionPool{sessions: map[types.NamespacedName]pooledSession{}, notify: notify}
}

// get returns the held session for key if it still matches the endpoint
// and is alive; otherwise it closes it and connects anew. The second result
// says whether the caller must Close the session after use (servers without
// listChanged are not held).
func (p *sessionPool) get(ctx context.Context, key types.NamespacedName, ep mcpclient.Endpoint, fingerprint string) (*mcpclient.Session, bool, error) {
	p.mu.Lock()
	held, ok := p.sessions[key]
	p.mu.Unlock()
	if ok {
		select {
		case <-held.session.Done():
		default:
			if held.fingerprint == fingerprint {
				return held.session, false, nil
			}
		}
		p.drop(key)
	}

	session, err := mcpclient.Connect(ctx, ep, func() { p.notify(key) })
	if err != nil {
		return nil, false, err
	}
	if !session.Info().ListChanged {
		return session, true, nil
	}
	p.mu.Lock()
	p.sessions[key] = pooledSession{fingerprint: fingerprint, session: session}
	p.mu.Unlock()
	go p.watchLoss(key, session)
	return session, false, nil
}

// watchLoss asks for a reconcile when a held session's stream is lost, so
// that the controller reconnects (and reports the server down) at once.
func (p *sessionPool) watchLoss(key types.NamespacedName, session *mcpclient.Session) {
	<-session.Done()
	p.mu.Lock()
	held, ok := p.sessions[key]
	stillHeld := ok && held.session == session
	if stillHeld {
		delete(p.sessions, key)
	}
	p.mu.Unlock()
	if stillHeld {
		p.notify(key)
	}
}

// drop closes and forgets the session of key, if any.
func (p *sessionPool) drop(key types.NamespacedName) {
	p.mu.Lock()
	held, ok := p.sessions[key]
	delete(p.sessions, key)
	p.mu.Unlock()
	if ok {
		held.session.Close()
	}
}

// closeAll ends every session, when the manager stops.
func (p *sessionPool) closeAll() {
	p.mu.Lock()
	held := p.sessions
	p.sessions = map[types.NamespacedName]pooledSession{}
	p.mu.Unlock()
	for _, h := range held {
		h.session.Close()
	}
}
