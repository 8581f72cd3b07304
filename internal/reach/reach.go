// Package reach turns an MCPServer's spec into what it takes to reach the
// server: the URL (or the in-cluster address of its Service, or of its
// workload's Service), header values read from Secrets, the TLS
// configuration, and the Credentials spec.auth asks for. The MCPServer
// controller and the catalog both connect through it, so they reach a
// server the same way.
package reach

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/upstreamauth"
)

// DefaultTimeout applies where the API server has not defaulted
// spec.timeout (objects written before the default existed).
const DefaultTimeout = 30 * time.Second

// SpecError is a spec that does not resolve: a missing Secret or ConfigMap
// (which recovers once it appears) or one that cannot work as written.
type SpecError struct {
	// Reason is a condition reason from the API package.
	Reason  string
	Message string
	// Terminal is true when only a spec change can fix it.
	Terminal bool
}

func (e *SpecError) Error() string { return e.Message }

// Read reads the URL, header values and CA bundle the spec names and
// returns the target to dial, fingerprinted with everything that shapes the
// connection (secret values only as a hash); egress limits the addresses
// it may be dialed at. spec.auth takes the target's Credentials from
// sources, the process's one (a spec.auth without sources is an error).
func Read(ctx context.Context, reader client.Reader, srv *mcpv1alpha1.MCPServer, egress *mcpclient.EgressPolicy, sources *upstreamauth.Sources) (mcpclient.Target, error) {
	t := mcpclient.Target{
		Revision:  revisionOf(srv),
		URL:       URL(srv),
		Transport: transport(srv),
		Headers:   map[string]string{},
		Timeout:   DurationOr(srv.Spec.Timeout, DefaultTimeout),
		Egress:    egress,
	}
	for _, h := range srv.Spec.Headers {
		switch {
		case h.Value != nil:
			t.Headers[h.Name] = *h.Value
		case h.ValueFrom != nil:
			value, err := secretValue(ctx, reader, srv.Namespace, h.ValueFrom.SecretKeyRef, "spec.headers["+h.Name+"]")
			if err != nil {
				return mcpclient.Target{}, err
			}
			t.Headers[h.Name] = string(value)
		}
	}
	tlsConfig, caPEM, err := readTLS(ctx, reader, srv.Namespace, srv.Spec.TLS, "spec.tls", mcpv1alpha1.ReasonInvalidSpec)
	if err != nil {
		return mcpclient.Target{}, err
	}
	t.TLS = tlsConfig
	creds, authFingerprint, err := readAuth(ctx, reader, srv, sources, egress, t.Timeout)
	if err != nil {
		return mcpclient.Target{}, err
	}
	t.Credentials = creds
	raw, _ := json.Marshal(struct {
		URL       string
		Transport mcpclient.Transport
		Headers   map[string]string
		Timeout   time.Duration
		Insecure  bool
		CA        []byte
		Auth      string `json:",omitempty"`
	}{t.URL, t.Transport, t.Headers, t.Timeout, t.TLS != nil && t.TLS.InsecureSkipVerify, caPEM, authFingerprint})
	sum := sha256.Sum256(raw)
	t.Fingerprint = hex.EncodeToString(sum[:])
	return t, nil
}

// readAuth makes the Credentials spec.auth asks for, from sources, and
// returns them with the fingerprint of the auth config (the client
// secret and CA bundle only as hashes); nil and "" without spec.auth.
func readAuth(ctx context.Context, reader client.Reader, srv *mcpv1alpha1.MCPServer, sources *upstreamauth.Sources,
	egress *mcpclient.EgressPolicy, timeout time.Duration) (mcpclient.Credentials, string, error) {
	auth := srv.Spec.Auth
	if auth == nil {
		return nil, "", nil
	}
	var (
		oc    *mcpv1alpha1.OAuth2Client
		field string
		cfg   = upstreamauth.Config{Egress: egress, Timeout: timeout}
	)
	switch {
	case auth.OAuth2ClientCredentials != nil && auth.TokenExchange != nil, auth.OAuth2ClientCredentials == nil && auth.TokenExchange == nil:
		return nil, "", &SpecError{Reason: mcpv1alpha1.ReasonAuthMisconfigured, Terminal: true,
			Message: "spec.auth must set exactly one of oauth2ClientCredentials and tokenExchange"}
	case auth.OAuth2ClientCredentials != nil:
		oc, field, cfg.Grant = auth.OAuth2ClientCredentials, "spec.auth.oauth2ClientCredentials", upstreamauth.GrantClientCredentials
	default:
		oc, field, cfg.Grant = &auth.TokenExchange.OAuth2Client, "spec.auth.tokenExchange", upstreamauth.GrantTokenExchange
		cfg.RequestedTokenType = auth.TokenExchange.RequestedTokenType
		if cfg.RequestedTokenType == "" {
			cfg.RequestedTokenType = upstreamauth.TokenTypeAccessToken
		}
	}
	if u, err := url.Parse(oc.TokenURL); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, "", &SpecError{Reason: mcpv1alpha1.ReasonAuthMisconfigured, Terminal: true,
			Message: field + ".tokenURL must be an absolute https URL"}
	}
	secret, err := secretValue(ctx, reader, srv.Namespace, oc.ClientSecretRef, field+".clientSecretRef")
	if err != nil {
		return nil, "", err
	}
	tlsConfig, caPEM, err := readTLS(ctx, reader, srv.Namespace, oc.TLS, field+".tls", mcpv1alpha1.ReasonAuthMisconfigured)
	if err != nil {
		return nil, "", err
	}
	cfg.TokenURL, cfg.ClientID, cfg.ClientSecret = oc.TokenURL, oc.ClientID, string(secret)
	cfg.Scopes, cfg.Audience, cfg.Resource, cfg.TLS = oc.Scopes, oc.Audience, oc.Resource, tlsConfig
	if sources == nil {
		return nil, "", errors.New("spec.auth is set, and this reader of MCPServers was given no token sources")
	}
	secretSum := sha256.Sum256(secret)
	raw, _ := json.Marshal(struct {
		Grant              upstreamauth.Grant
		TokenURL, ClientID string
		Secret             []byte
		Scopes             []string
		Audience, Resource string
		RequestedTokenType string
		Insecure           bool
		CA                 []byte
	}{cfg.Grant, cfg.TokenURL, cfg.ClientID, secretSum[:], cfg.Scopes, cfg.Audience, cfg.Resource, cfg.RequestedTokenType,
		tlsConfig != nil && tlsConfig.InsecureSkipVerify, caPEM})
	sum := sha256.Sum256(raw)
	fingerprint := hex.EncodeToString(sum[:])
	return sources.Credentials(srv.Namespace+"/"+srv.Name, fingerprint, cfg), fingerprint, nil
}

// revisionOf is the MCP revision the server spoke at its last discovery,
// so that the next connection starts with it.
func revisionOf(srv *mcpv1alpha1.MCPServer) string {
	if info := srv.Status.ServerInfo; info != nil {
		return info.ProtocolVersion
	}
	return ""
}

// URL is spec.url, or the in-cluster address of spec.service, or that of
// the Service the operator keeps for spec.workload.
func URL(srv *mcpv1alpha1.MCPServer) string {
	if w := srv.Spec.Workload; w != nil {
		return inCluster("http", srv.Name, srv.Namespace, WorkloadPort(w), WorkloadPath(w))
	}
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
	return inCluster(scheme, svc.Name, srv.Namespace, svc.Port, p)
}

func inCluster(scheme, service, namespace string, port int32, path string) string {
	return scheme + "://" + service + "." + namespace + ".svc:" + strconv.Itoa(int(port)) + path
}

// DefaultWorkloadPort is where a workload's server (or its bridge) listens
// where the API server has not defaulted spec.workload.port.
const DefaultWorkloadPort = 8080

// WorkloadPort is the port a workload's server, or its bridge, listens on.
func WorkloadPort(w *mcpv1alpha1.WorkloadSpec) int32 {
	if w.Port == 0 {
		return DefaultWorkloadPort
	}
	return w.Port
}

// WorkloadPath is a workload's MCP endpoint: the bridge's /mcp for Stdio,
// else spec.workload.path, by default /mcp for Streamable HTTP and /sse
// for SSE. The API cannot default it, since the default depends on the
// transport.
func WorkloadPath(w *mcpv1alpha1.WorkloadSpec) string {
	switch {
	case IsStdio(w):
		return "/mcp"
	case w.Path != "":
		return w.Path
	case w.Transport == mcpv1alpha1.WorkloadSSE:
		return "/sse"
	default:
		return "/mcp"
	}
}

// IsStdio reports whether a workload's server speaks stdio and runs behind
// the bridge (the default transport).
func IsStdio(w *mcpv1alpha1.WorkloadSpec) bool {
	return w.Transport == "" || w.Transport == mcpv1alpha1.WorkloadStdio
}

// transport is how to talk to the server: spec.transport, or for a
// workload what its transport says (the bridge speaks Streamable HTTP).
func transport(srv *mcpv1alpha1.MCPServer) mcpclient.Transport {
	w := srv.Spec.Workload
	switch {
	case w == nil:
		return mcpclient.Transport(srv.Spec.Transport)
	case w.Transport == mcpv1alpha1.WorkloadSSE:
		return mcpclient.TransportSSE
	default:
		return mcpclient.TransportStreamableHTTP
	}
}

func secretValue(ctx context.Context, reader client.Reader, namespace string, ref mcpv1alpha1.KeyReference, field string) ([]byte, error) {
	var secret corev1.Secret
	if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &SpecError{Reason: mcpv1alpha1.ReasonSecretNotFound,
				Message: fmt.Sprintf("Secret %s named by %s does not exist; create it and discovery resumes", ref.Name, field)}
		}
		return nil, fmt.Errorf("reading Secret %s: %w", ref.Name, err)
	}
	value, ok := secret.Data[ref.Key]
	if !ok {
		return nil, &SpecError{Reason: mcpv1alpha1.ReasonSecretNotFound,
			Message: fmt.Sprintf("Secret %s named by %s has no key %q", ref.Name, field, ref.Key)}
	}
	return value, nil
}

// readTLS makes the TLS configuration a TLSSpec at field says, with the
// CA bundle it names (also returned, for fingerprints); nil without one.
// A bundle that holds no certificate is a SpecError with reason
// noCertificate, terminal.
func readTLS(ctx context.Context, reader client.Reader, namespace string, spec *mcpv1alpha1.TLSSpec, field, noCertificate string) (*tls.Config, []byte, error) {
	if spec == nil {
		return nil, nil, nil
	}
	caPEM, err := caBundle(ctx, reader, namespace, spec, field)
	if err != nil {
		return nil, nil, err
	}
	config := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: spec.InsecureSkipVerify} //nolint:gosec // the user asked for it, and an Event warns
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, nil, &SpecError{Reason: noCertificate, Terminal: true,
				Message: "the CA bundle named by " + field + " contains no PEM certificate"}
		}
		config.RootCAs = pool
	}
	return config, caPEM, nil
}

// caBundle reads the CA bundle a TLSSpec at field names, nil when none.
func caBundle(ctx context.Context, reader client.Reader, namespace string, tlsSpec *mcpv1alpha1.TLSSpec, field string) ([]byte, error) {
	switch {
	case tlsSpec.CASecretRef != nil:
		return secretValue(ctx, reader, namespace, *tlsSpec.CASecretRef, field+".caSecretRef")
	case tlsSpec.CAConfigMapRef != nil:
		ref := tlsSpec.CAConfigMapRef
		var cm corev1.ConfigMap
		if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, &cm); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, &SpecError{Reason: mcpv1alpha1.ReasonConfigMapNotFound,
					Message: fmt.Sprintf("ConfigMap %s named by %s.caConfigMapRef does not exist; create it and discovery resumes", ref.Name, field)}
			}
			return nil, fmt.Errorf("reading ConfigMap %s: %w", ref.Name, err)
		}
		if value, ok := cm.Data[ref.Key]; ok {
			return []byte(value), nil
		}
		if value, ok := cm.BinaryData[ref.Key]; ok {
			return value, nil
		}
		return nil, &SpecError{Reason: mcpv1alpha1.ReasonConfigMapNotFound,
			Message: fmt.Sprintf("ConfigMap %s named by %s.caConfigMapRef has no key %q", ref.Name, field, ref.Key)}
	}
	return nil, nil
}

// authClient is spec.auth's OAuth client, nil without one.
func authClient(srv *mcpv1alpha1.MCPServer) *mcpv1alpha1.OAuth2Client {
	switch auth := srv.Spec.Auth; {
	case auth == nil:
		return nil
	case auth.OAuth2ClientCredentials != nil:
		return auth.OAuth2ClientCredentials
	case auth.TokenExchange != nil:
		return &auth.TokenExchange.OAuth2Client
	}
	return nil
}

// SecretsNamed lists the Secrets an MCPServer reads.
func SecretsNamed(srv *mcpv1alpha1.MCPServer) []string {
	var names []string
	for _, h := range srv.Spec.Headers {
		if h.ValueFrom != nil {
			names = append(names, h.ValueFrom.SecretKeyRef.Name)
		}
	}
	if srv.Spec.TLS != nil && srv.Spec.TLS.CASecretRef != nil {
		names = append(names, srv.Spec.TLS.CASecretRef.Name)
	}
	if oc := authClient(srv); oc != nil {
		names = append(names, oc.ClientSecretRef.Name)
		if oc.TLS != nil && oc.TLS.CASecretRef != nil {
			names = append(names, oc.TLS.CASecretRef.Name)
		}
	}
	return names
}

// ConfigMapsNamed lists the ConfigMaps an MCPServer reads.
func ConfigMapsNamed(srv *mcpv1alpha1.MCPServer) []string {
	var names []string
	if srv.Spec.TLS != nil && srv.Spec.TLS.CAConfigMapRef != nil {
		names = append(names, srv.Spec.TLS.CAConfigMapRef.Name)
	}
	if oc := authClient(srv); oc != nil && oc.TLS != nil && oc.TLS.CAConfigMapRef != nil {
		names = append(names, oc.TLS.CAConfigMapRef.Name)
	}
	return names
}

// DurationOr is d, or fallback where the API server has not defaulted it.
func DurationOr(d *metav1.Duration, fallback time.Duration) time.Duration {
	if d == nil || d.Duration <= 0 {
		return fallback
	}
	return d.Duration
}
