package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	. "github.com/onsi/gomega" //nolint:revive,staticcheck // Gomega's DSL reads best dot-imported
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// CatalogRoles are the ClusterRoles config/rbac ships for the catalog's
// callers (catalog-reader, catalog-caller, catalog-collection-caller), so
// that tests exercise the roles an admin binds.
func CatalogRoles() ([]rbacv1.ClusterRole, error) {
	_, here, _, _ := runtime.Caller(0)
	file := filepath.Join(filepath.Dir(here), "..", "..", "config", "rbac", "catalog_roles.yaml")
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var roles []rbacv1.ClusterRole
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		roles = append(roles, role)
	}
	return roles, nil
}

// InstallCatalogRoles creates CatalogRoles on the control plane (again is
// fine).
func (e *Env) InstallCatalogRoles() {
	roles, err := CatalogRoles()
	Expect(err).NotTo(HaveOccurred())
	for i := range roles {
		Expect(client.IgnoreAlreadyExists(e.Client.Create(e.Ctx, &roles[i]))).To(Succeed())
	}
}
