package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolmesh/mcp-operator/internal/loopback"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testoidc"
)

// jwtReplica is a second manager beside the calls manager, as the chart
// deploys them (two replicas, leader election): a follower, so it runs
// the catalog alone from its informer cache while the leader runs the
// controllers. It checks its callers' JWTs itself (--catalog-auth=oidc)
// against a real OpenID provider (internal/testoidc: zitadel's OP over
// TLS), and RBAC decides with SubjectAccessReviews. Callers present one
// token, valid for longer than the run, so what the calls measure is the
// cached path: the token's check and the access review are reused for
// --catalog-auth-cache-ttl (the default, 10 s) and then made again.
type jwtReplica struct {
	manager *manager
	// token is the callers' access token, user the name RBAC knows it by.
	token, user string
}

const (
	// jwtSubject is the sub of the callers' token.
	jwtSubject = "bench"
	// jwtLifetime outlasts any run of the benchmark, so that no token
	// expires under the calls.
	jwtLifetime = 2 * time.Hour
	// callerRole is the ClusterRole of config/rbac/catalog_roles.yaml
	// that lets a caller read menus and call tools.
	callerRole = "catalog-caller"
)

// startJWTReplica starts the provider, lets its user call tools in every
// namespace, gets the callers' token and starts the replica with flags
// (the leader's, leader election among them) and the OIDC flags, once
// its catalog's URL, the audience of the token, is chosen.
func startJWTReplica(b *testing.B, cp *controlPlane, flags []string) *jwtReplica {
	b.Helper()
	addr, err := loopback.FreeAddr()
	if err != nil {
		b.Fatal(err)
	}
	publicURL := "http://" + addr
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	const clientID = "bench-agent"
	p, err := testoidc.Start(testoidc.Options{AccessTokenLifetime: jwtLifetime,
		Clients: []testoidc.Client{{ID: clientID, Secret: hex.EncodeToString(secret), Subject: jwtSubject, Audience: []string{publicURL}}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Stop)
	caFile := filepath.Join(workDir, "oidc-ca.pem")
	if err := os.WriteFile(caFile, p.CAPEM, 0o600); err != nil {
		b.Fatal(err)
	}
	r := &jwtReplica{user: p.Issuer + "#" + jwtSubject}
	bindCatalogCaller(b, cp, r.user)
	if r.token, err = p.ClientCredentialsToken(context.Background(), clientID, hex.EncodeToString(secret)); err != nil {
		b.Fatal(err)
	}
	r.manager, err = launchManagerAt(cp, "calls-jwt", addr, nil, append(append([]string(nil), flags...),
		"--catalog-auth=oidc", "--catalog-oidc-issuer-url="+p.Issuer, "--catalog-oidc-ca-file="+caFile,
		"--catalog-public-url="+publicURL)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.manager.stop)
	if err := r.manager.waitReady(2 * time.Minute); err != nil {
		b.Fatal(err)
	}
	return r
}

// bindCatalogCaller creates the catalog's ClusterRoles as config/rbac
// ships them and binds catalog-caller (get, list and execute on
// toolcollections and mcpservers) to user in every namespace.
func bindCatalogCaller(b *testing.B, cp *controlPlane, user string) {
	b.Helper()
	ctx := context.Background()
	roles, err := testenv.CatalogRoles()
	if err != nil {
		b.Fatal(err)
	}
	found := false
	for i := range roles {
		found = found || roles[i].Name == callerRole
		if err := cp.client.Create(ctx, &roles[i]); client.IgnoreAlreadyExists(err) != nil {
			b.Fatal(err)
		}
	}
	if !found {
		b.Fatalf("config/rbac/catalog_roles.yaml has no ClusterRole %s", callerRole)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-" + callerRole + "-"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: callerRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	if err := cp.client.Create(ctx, binding); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cp.client.Delete(context.Background(), binding) })
}

// refusesAnonymous fails the benchmark unless the replica answers a call
// without a token 401: its calls are measured with the check made.
func (r *jwtReplica) refusesAnonymous(b *testing.B, url string, body []byte) {
	b.Helper()
	resp, err := restClient.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		b.Fatalf("the JWT replica answered a call without a token %d, not 401", resp.StatusCode)
	}
}
