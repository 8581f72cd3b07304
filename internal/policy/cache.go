package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"k8s.io/utils/lru"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// Cache compiles each policy once. A collection's policy is read on every
// change in its namespace (the controller reconciles the collection, the
// catalog builds its menu anew) and changes far less often; compiling
// takes about 0.1 ms a rule. It keeps the outcome, error or policy, of
// the last size policies by content, and is safe for concurrent use.
type Cache struct {
	compiled *lru.Cache
}

type compiled struct {
	policy *Policy
	err    error
}

// NewCache keeps the last size policies compiled.
func NewCache(size int) *Cache { return &Cache{compiled: lru.New(size)} }

// Compile is Compile(spec), from the cache when a policy with the same
// content was compiled before.
func (c *Cache) Compile(spec *mcpv1alpha1.ToolPolicy) (*Policy, error) {
	raw, _ := json.Marshal(spec)
	sum := sha256.Sum256(raw)
	key := hex.EncodeToString(sum[:])
	if got, ok := c.compiled.Get(key); ok {
		v := got.(compiled)
		return v.policy, v.err
	}
	p, err := Compile(spec)
	c.compiled.Add(key, compiled{policy: p, err: err})
	return p, err
}
