package toolcatalog

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Peers says how a replica reaches the other replicas of the catalog, so
// that a caller's answer to a question another replica relayed (relay.go),
// or a 2026-07-28 call sent again with a state another replica sealed
// (mcp_input.go), reaches it: a load balancer spreads a caller's requests
// over replicas. The zero value forwards nothing.
type Peers struct {
	// Self is this replica's pod name ($POD_NAME): the ids of the questions
	// it relays, and the states it seals, name it.
	Self string
	// Namespace and Labels select the manager's pods. A request is
	// forwarded only to the pod it names when that pod is in Namespace and
	// carries Labels, at the container port named "catalog", so that a
	// name a caller made up cannot send its request anywhere else.
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

// forwardedHeader marks a request forwarded by a replica: the replica that
// gets it does not forward it again.
const forwardedHeader = "Mcp-Operator-Forwarded"

// forwardTimeout bounds finding the owner's pod; maxForwarded, a
// forwarded request and its answer (a call sent again runs as long as its
// server takes, up to its spec.timeout).
const (
	forwardTimeout = 10 * time.Second
	maxForwarded   = 15 * time.Minute
)

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
	// The owner's answer may be a call's event stream, as long as the
	// call: bounded, as every call is.
	fwdCtx, cancelFwd := context.WithTimeout(r.Context(), maxForwarded)
	defer cancelFwd()
	req, err := peerRequest(fwdCtx, r, address, body)
	if err != nil {
		return false
	}
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

// peerRequest is r, with body, as it is forwarded to the replica at
// address: its headers but those of its connection, marked forwarded.
func peerRequest(ctx context.Context, r *http.Request, address string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+address+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for name, values := range r.Header {
		if !hopByHop[http.CanonicalHeaderKey(name)] {
			req.Header[name] = values
		}
	}
	req.Header.Set(forwardedHeader, "1")
	return req, nil
}

// hopByHop are the headers of one connection, not forwarded.
var hopByHop = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true}

// peerAddress is the catalog address of the manager pod named owner, if
// it is one. The manager's pods are listed (one label-selected List) when
// the last list is peerTTL old, or, for a name it lacks, peerRelist old:
// a new replica is found within a second, and ids a caller made up cost
// the API server no more than one List a second.
func (m *mcpHandlers) peerAddress(ctx context.Context, owner string) (string, bool) {
	return m.peers.address(ctx, m.catalog.opts.Peers, owner, m.catalog.log.Info)
}

const (
	peerTTL    = 10 * time.Second
	peerRelist = time.Second
)

// peerList is the manager's pods as last listed: name → catalog address.
type peerList struct {
	mu     sync.Mutex
	byName map[string]string
	// listed is when the last List was made, or failed; listing, while a
	// List is under way, closes when it ends.
	listed  time.Time
	listing chan struct{}
}

func (l *peerList) address(ctx context.Context, p Peers, owner string, logInfo func(string, ...any)) (string, bool) {
	for {
		l.mu.Lock()
		age := time.Since(l.listed)
		address, known := l.byName[owner]
		switch {
		case known && age < peerTTL, age < peerRelist:
			l.mu.Unlock()
			return address, known && age < peerTTL
		case l.listing != nil:
			wait := l.listing
			l.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return "", false
			}
		}
		done := make(chan struct{})
		l.listing = done
		l.mu.Unlock()
		byName, err := p.list(ctx)
		if err != nil {
			logInfo("Listing the catalog's replicas failed", "error", err.Error())
		}
		l.mu.Lock()
		l.byName, l.listed, l.listing = byName, time.Now(), nil // none known after a failed List
		close(done)
		l.mu.Unlock()
	}
}

// others are the catalog addresses of the replicas other than this one,
// listed again when the last list is peerRelist old: a request for them
// all (a subscription) is rare, and must reach a replica that just came.
func (l *peerList) others(ctx context.Context, p Peers, logInfo func(string, ...any)) map[string]string {
	l.mu.Lock()
	fresh := time.Since(l.listed) < peerRelist
	l.mu.Unlock()
	if !fresh {
		// A name nobody has forces a List that is peerRelist old.
		l.address(ctx, p, "", logInfo)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	others := make(map[string]string, len(l.byName))
	for name, address := range l.byName {
		if name != p.Self {
			others[name] = address
		}
	}
	return others
}

// list reads the manager's pods that run: name → catalog address.
func (p Peers) list(ctx context.Context) (map[string]string, error) {
	pods := &corev1.PodList{}
	if err := p.Reader.List(ctx, pods, client.InNamespace(p.Namespace), client.MatchingLabels(p.Labels)); err != nil {
		return nil, err
	}
	byName := map[string]string{}
	for i := range pods.Items {
		if address := catalogAddress(&pods.Items[i]); address != "" {
			byName[pods.Items[i].Name] = address
		}
	}
	return byName, nil
}

// catalogAddress is a running manager pod's catalog address: its IP and
// the container port named catalog; "" for a pod without them, not
// running, or going.
func catalogAddress(pod *corev1.Pod) string {
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || pod.DeletionTimestamp != nil {
		return "" // an evicted pod keeps its IP, which another pod may have now
	}
	for _, c := range pod.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == catalogPortName {
				return net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port.ContainerPort)))
			}
		}
	}
	return ""
}

// peerClient forwards answers between replicas: plain HTTP inside the
// cluster, as the Service reaches them, never through a proxy.
var peerClient = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}}
