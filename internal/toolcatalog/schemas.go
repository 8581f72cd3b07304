package toolcatalog

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxCachedSchemas bounds the compiled schemas kept; past it the cache
// starts over, which costs a compile per tool, never correctness.
const maxCachedSchemas = 20000

// schemaCache compiles each tool's input schema once per definition: the
// key is the tool's definition hash, which changes with the schema.
type schemaCache struct {
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
}

func newSchemaCache() *schemaCache {
	return &schemaCache{compiled: map[string]*jsonschema.Schema{}}
}

// validator returns the compiled schema, or nil when the server's schema
// cannot be compiled: the server is then the judge of its arguments.
func (s *schemaCache) validator(hash string, schema []byte) *jsonschema.Schema {
	s.mu.Lock()
	compiled, ok := s.compiled[hash]
	s.mu.Unlock()
	if ok {
		return compiled
	}
	compiled = compile(schema)
	s.mu.Lock()
	if len(s.compiled) >= maxCachedSchemas {
		s.compiled = map[string]*jsonschema.Schema{}
	}
	s.compiled[hash] = compiled
	s.mu.Unlock()
	return compiled
}

func compile(schema []byte) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil
	}
	c := jsonschema.NewCompiler()
	// No loader for remote $refs: a tool schema must not make the catalog
	// fetch URLs.
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource("mem:///tool-input.json", doc); err != nil {
		return nil
	}
	compiled, err := c.Compile("mem:///tool-input.json")
	if err != nil {
		return nil
	}
	return compiled
}

// validationMessages lists why arguments fail a schema, one line per leaf
// error, in a stable order.
func validationMessages(err error) []string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var out []string
	for _, unit := range ve.BasicOutput().Errors {
		if unit.Error == nil {
			continue
		}
		location := unit.InstanceLocation
		if location == "" {
			location = "/"
		}
		out = append(out, fmt.Sprintf("at %s: %s", location, unit.Error.String()))
	}
	if len(out) == 0 {
		out = []string{ve.Error()}
	}
	sort.Strings(out)
	return out
}
