package faults

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// tcpProxy forwards connections to the API server until it is cut: then it
// drops every open connection and closes each new one at once, so the API
// server is unreachable for whoever goes through it.
type tcpProxy struct {
	ln       net.Listener
	target   string
	mu       sync.Mutex
	down     bool
	conns    map[net.Conn]struct{}
	refused  atomic.Int64
	accepted atomic.Int64
}

func newTCPProxy(target string) (*tcpProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	return p, nil
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.mu.Lock()
		down := p.down
		if !down {
			p.conns[conn] = struct{}{}
		}
		p.mu.Unlock()
		if down {
			p.refused.Add(1)
			_ = conn.Close()
			continue
		}
		go p.pipe(conn)
	}
}

func (p *tcpProxy) pipe(client net.Conn) {
	defer p.forget(client)
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.conns[server] = struct{}{}
	p.mu.Unlock()
	defer p.forget(server)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(server, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, server); done <- struct{}{} }()
	<-done
}

func (p *tcpProxy) forget(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// cut makes the API server unreachable through the proxy.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// restore lets connections through again.
func (p *tcpProxy) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

func (p *tcpProxy) close() { _ = p.ln.Close(); p.cut() }
