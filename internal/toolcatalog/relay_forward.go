package toolcatalog

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Peers says how a replica reaches the other replicas of the catalog, so
// that a caller's answer to a question another replica relayed (relay.go)
// reaches it: a load balancer spreads a session's requests over replicas,
// and the answer is a request of its own. The zero value forwards nothing.
type Peers struct {
	// Self is this replica's pod name ($POD_NAME): the ids of the questions
	// it relays end with it.
	Self string
	// Namespace and Labels select the manager's pods. An answer is
	// forwarded only to the pod its id names when that pod is in Namespace
	// and carries Labels, at the container port named "catalog", so that
	// an id a caller made up cannot send its request anywhere else.
	Namespace string
	Labels    labels.Set
	// Reader reads those pods; the manager's cache holds only the pods it
	// manages, so it is the API server's reader.
	Reader client.Reader
}

// enabled says answers are forwarded: only when the manager's pods can
// be told from any other pod of the namespace by their labels.
func (p Peers) enabled() bool {
	return p.Self != "" && p.Namespace != "" && len(p.Labels) > 0 && p.Reader != nil
}

// catalogPortName is the name of the manager container's catalog port
// (config/manager, the chart).
const catalogPortName = "catalog"

// forwardedHeader marks an answer forwarded by a replica: the replica that
// gets it does not forward it again.
const forwardedHeader = "Mcp-Operator-Forwarded"

// forwardTimeout bounds finding the owner's pod.
const forwardTimeout = 10 * time.Second

// relayOwner is the pod name a relay id ends with, if any.
func relayOwner(id string) string {
	_, owner, _ := strings.Cut(strings.TrimPrefix(id, relayIDPrefix), ".")
	return owner
}

// forwardAnswer sends a caller's answer to the replica that relayed the
// question, and answers the caller as it answered; false when there is
// none to send it to (a made-up id, a replica gone).
func (m *mcpHandlers) forwardAnswer(w http.ResponseWriter, r *http.Request, id string, body []byte) bool {
	return m.forward(w, r, relayOwner(id), body)
}

// forward sends a request meant for the replica whose pod is owner there,
// as it came, and answers with what that replica answers, streamed; false
// when it is not forwarded: owner is this replica, no replica, or the
// request was forwarded once already.
func (m *mcpHandlers) forward(w http.ResponseWriter, r *http.Request, owner string, body []byte) bool {
	peers := m.catalog.opts.Peers
	if !peers.enabled() || owner == "" || owner == peers.Self || r.Header.Get(forwardedHeader) != "" ||
		len(validation.IsDNS1123Subdomain(owner)) > 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), forwardTimeout)
	address, ok := m.peerAddress(ctx, owner)
	cancel()
	if !ok {
		return false
	}
	// The owner's answer may be a call's event stream: no deadline but the
	// caller's.
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, "http://"+address+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return false
	}
	for name, values := range r.Header {
		if !hopByHop[http.CanonicalHeaderKey(name)] {
			req.Header[name] = values
		}
	}
	req.Header.Set(forwardedHeader, "1")
	resp, err := peerClient.Do(req)
	if err != nil {
		m.catalog.log.Info("Forwarding a request to the replica it belongs to failed", "replica", owner, "error", err.Error())
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	for _, name := range []string{"Content-Type", "Cache-Control", "Retry-After"} {
		if v := resp.Header.Get(name); v != "" {
			w.Header().Set(name, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return true
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return true
		}
	}
}

// hopByHop are the headers of one connection, not forwarded.
var hopByHop = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true}

// peerAddress is the catalog address of the manager pod named owner, if
// it is one. What a pod name resolved to is kept for peerTTL, in a cache
// of peerCacheSize names, so that answers (and made-up ids) cost the API
// server one read a name at most that often.
func (m *mcpHandlers) peerAddress(ctx context.Context, owner string) (string, bool) {
	type resolved struct {
		address string
		until   time.Time
	}
	if v, ok := m.peers.Get(owner); ok && time.Now().Before(v.(resolved).until) {
		address := v.(resolved).address
		return address, address != ""
	}
	address, err := m.catalog.opts.Peers.addressOf(ctx, owner)
	if err != nil {
		m.catalog.log.Info("Reading a replica's pod failed", "pod", owner, "error", err.Error())
		return "", false // not kept: the next answer reads again
	}
	m.peers.Add(owner, resolved{address: address, until: time.Now().Add(peerTTL)})
	return address, address != ""
}

const (
	peerTTL       = 10 * time.Second
	peerCacheSize = 64
)

// addressOf reads the pod named owner: its catalog address when it is a
// manager pod that runs, else "" (no such pod included); an error only
// when the pod could not be read.
func (p Peers) addressOf(ctx context.Context, owner string) (string, error) {
	pod := &corev1.Pod{}
	if err := p.Reader.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: owner}, pod); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if !labels.SelectorFromSet(p.Labels).Matches(labels.Set(pod.Labels)) || pod.Status.PodIP == "" || pod.DeletionTimestamp != nil {
		return "", nil
	}
	for _, c := range pod.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == catalogPortName {
				return net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port.ContainerPort))), nil
			}
		}
	}
	return "", nil
}

// peerClient forwards answers between replicas: plain HTTP inside the
// cluster, as the Service reaches them, never through a proxy.
var peerClient = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}}
