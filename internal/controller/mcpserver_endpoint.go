package controller

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// specError is a failure to turn the spec into an endpoint: a missing Secret
// (which recovers on its own once it appears) or a spec that cannot work.
type specError struct {
	reason   string
	message  string
	terminal bool
}

func (e *specError) Error() string { return e.message }

// resolvedEndpoint is an endpoint and a fingerprint of everything that
// shapes the connection, secret values included; only the hash is kept.
type resolvedEndpoint struct {
	endpoint    mcpclient.Endpoint
	fingerprint string
}

// resolveEndpoint reads the URL, header values and CA bundle the spec names.
func (r *MCPServerReconciler) resolveEndpoint(ctx context.Context, srv *mcpv1alpha1.MCPServer) (resolvedEndpoint, error) {
	if err := validateToolFilter(srv.Spec.ToolFilter); err != nil {
		return resolvedEndpoint{}, err
	}
	ep := mcpclient.Endpoint{
		URL:       endpointURL(srv),
		Transport: mcpclient.Transport(srv.Spec.Transport),
		Headers:   map[string]string{},
		Timeout:   durationOr(srv.Spec.Timeout, 30*time.Second),
	}
	for _, h := range srv.Spec.Headers {
		switch {
		case h.Value != nil:
			ep.Headers[h.Name] = *h.Value
		case h.ValueFrom != nil:
			value, err := r.secretValue(ctx, srv.Namespace, h.ValueFrom.SecretKeyRef, "spec.headers["+h.Name+"]")
			if err != nil {
				return resolvedEndpoint{}, err
			}
			ep.Headers[h.Name] = string(value)
		}
	}
	caPEM, err := r.caBundle(ctx, srv)
	if err != nil {
		return resolvedEndpoint{}, err
	}
	if tlsSpec := srv.Spec.TLS; tlsSpec != nil {
		ep.TLS = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: tlsSpec.InsecureSkipVerify} //nolint:gosec // the user asked for it, and an Event warns
		if len(caPEM) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(caPEM) {
				return resolvedEndpoint{}, &specError{reason: mcpv1alpha1.ReasonInvalidSpec, terminal: true,
					message: "the CA bundle named by spec.tls contains no PEM certificate"}
			}
			ep.TLS.RootCAs = pool
		}
	}
	raw, _ := json.Marshal(struct {
		URL       string
		Transport mcpclient.Transport
		Headers   map[string]string
		Timeout   time.Duration
		Insecure  bool
		CA        []byte
	}{ep.URL, ep.Transport, ep.Headers, ep.Timeout, ep.TLS != nil && ep.TLS.InsecureSkipVerify, caPEM})
	sum := sha256.Sum256(raw)
	return resolvedEndpoint{endpoint: ep, fingerprint: hex.EncodeToString(sum[:])}, nil
}

// endpointURL is spec.url, or the in-cluster address of spec.service.
func endpointURL(srv *mcpv1alpha1.MCPServer) string {
	svc := srv.Spec.Service
	if svc == nil {
		return srv.Spec.URL
	}
	scheme, p := svc.Scheme, svc.Path
	if scheme == "" {
		scheme = "http"
	}
	if p == "" {
		p = "/"
	}
	return scheme + "://" + svc.Name + "." + srv.Namespace + ".svc:" + strconv.Itoa(int(svc.Port)) + p
}

func (r *MCPServerReconciler) secretValue(ctx context.Context, namespace string, ref mcpv1alpha1.KeyReference, field string) ([]byte, error) {
	var secret corev1.Secret
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &specError{reason: mcpv1alpha1.ReasonSecretNotFound,
				message: fmt.Sprintf("Secret %s named by %s does not exist; create it and discovery resumes", ref.Name, field)}
		}
		return nil, fmt.Errorf("reading Secret %s: %w", ref.Name, err)
	}
	value, ok := secret.Data[ref.Key]
	if !ok {
		return nil, &specError{reason: mcpv1alpha1.ReasonSecretNotFound,
			message: fmt.Sprintf("Secret %s named by %s has no key %q", ref.Name, field, ref.Key)}
	}
	return value, nil
}

func (r *MCPServerReconciler) caBundle(ctx context.Context, srv *mcpv1alpha1.MCPServer) ([]byte, error) {
	tlsSpec := srv.Spec.TLS
	switch {
	case tlsSpec == nil:
		return nil, nil
	case tlsSpec.CASecretRef != nil:
		return r.secretValue(ctx, srv.Namespace, *tlsSpec.CASecretRef, "spec.tls.caSecretRef")
	case tlsSpec.CAConfigMapRef != nil:
		ref := tlsSpec.CAConfigMapRef
		var cm corev1.ConfigMap
		if err := r.Get(ctx, types.NamespacedName{Namespace: srv.Namespace, Name: ref.Name}, &cm); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, &specError{reason: mcpv1alpha1.ReasonConfigMapNotFound,
					message: fmt.Sprintf("ConfigMap %s named by spec.tls.caConfigMapRef does not exist; create it and discovery resumes", ref.Name)}
			}
			return nil, fmt.Errorf("reading ConfigMap %s: %w", ref.Name, err)
		}
		if value, ok := cm.Data[ref.Key]; ok {
			return []byte(value), nil
		}
		if value, ok := cm.BinaryData[ref.Key]; ok {
			return value, nil
		}
		return nil, &specError{reason: mcpv1alpha1.ReasonConfigMapNotFound,
			message: fmt.Sprintf("ConfigMap %s named by spec.tls.caConfigMapRef has no key %q", ref.Name, ref.Key)}
	}
	return nil, nil
}

// validateToolFilter refuses glob patterns path.Match cannot use; the API
// server cannot check them.
func validateToolFilter(f *mcpv1alpha1.ToolFilter) error {
	if f == nil {
		return nil
	}
	for _, p := range append(append([]string{}, f.Include...), f.Exclude...) {
		if _, err := path.Match(p, ""); err != nil {
			return &specError{reason: mcpv1alpha1.ReasonInvalidSpec, terminal: true,
				message: fmt.Sprintf("spec.toolFilter pattern %q is not a valid glob; fix it to resume discovery", p)}
		}
	}
	return nil
}

// secretsReferenced lists the Secrets an MCPServer reads, for the index
// that maps a changed Secret to the servers to reconcile.
func secretsReferenced(srv *mcpv1alpha1.MCPServer) []string {
	var names []string
	for _, h := range srv.Spec.Headers {
		if h.ValueFrom != nil {
			names = append(names, h.ValueFrom.SecretKeyRef.Name)
		}
	}
	if srv.Spec.TLS != nil && srv.Spec.TLS.CASecretRef != nil {
		names = append(names, srv.Spec.TLS.CASecretRef.Name)
	}
	return names
}

// configMapsReferenced lists the ConfigMaps an MCPServer reads.
func configMapsReferenced(srv *mcpv1alpha1.MCPServer) []string {
	if srv.Spec.TLS != nil && srv.Spec.TLS.CAConfigMapRef != nil {
		return []string{srv.Spec.TLS.CAConfigMapRef.Name}
	}
	return nil
}

// durationOr is d, or fallback where the API server has not defaulted it
// (objects written before the default existed).
func durationOr(d *metav1.Duration, fallback time.Duration) time.Duration {
	if d == nil || d.Duration <= 0 {
		return fallback
	}
	return d.Duration
}
