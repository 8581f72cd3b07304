package reach

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/upstreamauth"
)

func authServer(auth *mcpv1alpha1.UpstreamAuth) *mcpv1alpha1.MCPServer {
	return &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "issues"},
		Spec: mcpv1alpha1.MCPServerSpec{URL: "https://issues.example.com/mcp", Auth: auth}}
}

func oauthClient() mcpv1alpha1.OAuth2Client {
	return mcpv1alpha1.OAuth2Client{TokenURL: "https://idp.example.com/oauth/token", ClientID: "mcp-operator",
		ClientSecretRef: mcpv1alpha1.KeyReference{Name: "issues-oauth", Key: "client-secret"},
		Scopes:          []string{"issues.read"}, Audience: "https://issues.example.com/mcp"}
}

func withObjects(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func secret(name, key, value string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: name}, Data: map[string][]byte{key: []byte(value)}}
}

// TestAuthGivesTheTargetCredentials: spec.auth makes the target's
// Credentials, the same ones read after read while the config and the
// client secret stay; a new secret makes new ones and a new fingerprint,
// which shows the secret only as a hash.
func TestAuthGivesTheTargetCredentials(t *testing.T) {
	ctx := context.Background()
	sources := upstreamauth.NewSources()
	oc := oauthClient()
	for _, tt := range []struct {
		name      string
		auth      *mcpv1alpha1.UpstreamAuth
		perCaller bool
	}{
		{"client credentials", &mcpv1alpha1.UpstreamAuth{OAuth2ClientCredentials: &oc}, false},
		{"token exchange", &mcpv1alpha1.UpstreamAuth{TokenExchange: &mcpv1alpha1.TokenExchange{OAuth2Client: oc}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := authServer(tt.auth)
			reader := withObjects(t, secret("issues-oauth", "client-secret", "s3cret-one"))
			first, err := Read(ctx, reader, srv, nil, sources)
			if err != nil {
				t.Fatal(err)
			}
			if first.Credentials == nil || first.Credentials.PerCaller() != tt.perCaller {
				t.Fatalf("credentials %v, want some that are per caller: %v", first.Credentials, tt.perCaller)
			}
			again, err := Read(ctx, reader, srv, nil, sources)
			if err != nil {
				t.Fatal(err)
			}
			if again.Credentials != first.Credentials || again.Fingerprint != first.Fingerprint {
				t.Error("reading the same spec and Secret again gave other credentials or another fingerprint")
			}

			rotated := withObjects(t, secret("issues-oauth", "client-secret", "s3cret-two"))
			after, err := Read(ctx, rotated, srv, nil, sources)
			if err != nil {
				t.Fatal(err)
			}
			if after.Fingerprint == first.Fingerprint || after.Credentials == first.Credentials {
				t.Error("a new client secret kept the fingerprint or the credentials")
			}

			changed := srv.DeepCopy()
			changed.Spec.Auth = tt.auth.DeepCopy()
			if changed.Spec.Auth.TokenExchange != nil {
				changed.Spec.Auth.TokenExchange.Audience = "https://other.example.com"
			} else {
				changed.Spec.Auth.OAuth2ClientCredentials.Audience = "https://other.example.com"
			}
			other, err := Read(ctx, reader, changed, nil, sources)
			if err != nil {
				t.Fatal(err)
			}
			if other.Fingerprint == first.Fingerprint || other.Credentials == first.Credentials {
				t.Error("a new audience kept the fingerprint or the credentials")
			}

			plain, err := Read(ctx, reader, authServer(nil), nil, sources)
			if err != nil || plain.Credentials != nil || plain.Fingerprint == first.Fingerprint {
				t.Errorf("without spec.auth: credentials %v, err %v", plain.Credentials, err)
			}
		})
	}
}

// TestAuthThatCannotBeRead: a missing Secret waits for it; a CA bundle
// without a certificate stalls; a reader without sources cannot make
// credentials and says so rather than calling without them.
func TestAuthThatCannotBeRead(t *testing.T) {
	ctx := context.Background()
	oc := oauthClient()
	srv := authServer(&mcpv1alpha1.UpstreamAuth{OAuth2ClientCredentials: &oc})

	_, err := Read(ctx, withObjects(t), srv, nil, upstreamauth.NewSources())
	var spec *SpecError
	if !errors.As(err, &spec) || spec.Reason != mcpv1alpha1.ReasonSecretNotFound || spec.Terminal {
		t.Errorf("a missing Secret: got %v, want SecretNotFound, not terminal", err)
	}

	badCA := srv.DeepCopy()
	badCA.Spec.Auth.OAuth2ClientCredentials.TLS = &mcpv1alpha1.TLSSpec{CASecretRef: &mcpv1alpha1.KeyReference{Name: "idp-ca", Key: "ca.crt"}}
	reader := withObjects(t, secret("issues-oauth", "client-secret", "s3cret"), secret("idp-ca", "ca.crt", "not a certificate"))
	_, err = Read(ctx, reader, badCA, nil, upstreamauth.NewSources())
	if !errors.As(err, &spec) || spec.Reason != mcpv1alpha1.ReasonAuthMisconfigured || !spec.Terminal {
		t.Errorf("a CA bundle without a certificate: got %v, want AuthMisconfigured, terminal", err)
	}

	_, err = Read(ctx, withObjects(t, secret("issues-oauth", "client-secret", "s3cret")), srv, nil, nil)
	if err == nil || errors.As(err, &spec) {
		t.Errorf("no sources: got %v, want an error", err)
	}
}

// TestAuthObjectsAreWatched: the Secrets and ConfigMaps spec.auth names
// are among those the server reads.
func TestAuthObjectsAreWatched(t *testing.T) {
	oc := oauthClient()
	oc.TLS = &mcpv1alpha1.TLSSpec{CAConfigMapRef: &mcpv1alpha1.KeyReference{Name: "idp-ca", Key: "ca.crt"}}
	srv := authServer(&mcpv1alpha1.UpstreamAuth{TokenExchange: &mcpv1alpha1.TokenExchange{OAuth2Client: oc}})
	if got := SecretsNamed(srv); !slices.Contains(got, "issues-oauth") {
		t.Errorf("Secrets named: %v", got)
	}
	if got := ConfigMapsNamed(srv); !slices.Equal(got, []string{"idp-ca"}) {
		t.Errorf("ConfigMaps named: %v", got)
	}
	oc.TLS = &mcpv1alpha1.TLSSpec{CASecretRef: &mcpv1alpha1.KeyReference{Name: "idp-ca-secret", Key: "ca.crt"}}
	srv = authServer(&mcpv1alpha1.UpstreamAuth{OAuth2ClientCredentials: &oc})
	if got := SecretsNamed(srv); !slices.Equal(got, []string{"issues-oauth", "idp-ca-secret"}) {
		t.Errorf("Secrets named: %v", got)
	}
}
