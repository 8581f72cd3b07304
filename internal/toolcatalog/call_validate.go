package toolcatalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"k8s.io/utils/lru"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// maxCachedSchemas bounds the compiled schemas kept; past it the least
// recently used goes, which costs a compile, never correctness.
const maxCachedSchemas = 20000

// schemaCache compiles each tool's input schema once per definition: the
// key is the tool's definition hash, which changes with the schema.
type schemaCache struct {
	compiled *lru.Cache
}

func newSchemaCache() *schemaCache {
	return &schemaCache{compiled: lru.New(maxCachedSchemas)}
}

// validator returns the compiled schema, or nil when the server's schema
// cannot be compiled: the server is then the judge of its arguments.
func (s *schemaCache) validator(hash string, schema []byte) *jsonschema.Schema {
	if compiled, ok := s.compiled.Get(hash); ok {
		return compiled.(*jsonschema.Schema)
	}
	compiled := compile(schema)
	s.compiled.Add(hash, compiled)
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

// validate checks arguments against the tool's input schema, compiled once
// per definition. name is the tool's name as the caller called it (a
// collection's rename, not the server's), which the error names.
func (c *Catalog) validate(name string, tool *mcpv1alpha1.Tool, arguments json.RawMessage) error {
	schema := c.schemas.validator(tool.Hash, tool.InputSchema.Raw)
	if schema == nil {
		return nil
	}
	instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(arguments))
	if err != nil {
		return &requestError{code: http.StatusBadRequest, message: "arguments must be a JSON object"}
	}
	if err := schema.Validate(instance); err != nil {
		details := validationMessages(err)
		return &requestError{code: http.StatusUnprocessableEntity,
			message: fmt.Sprintf("arguments do not match the input schema of %s: %s", name, strings.Join(details, "; ")),
			details: details}
	}
	return nil
}
