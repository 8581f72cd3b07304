package toolcatalog

import (
	"bytes"
	"encoding/json"
	"strings"

	"k8s.io/utils/lru"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/strictschema"
)

// A menu asked for with ?strict=true is served in its format's strict
// variant, the format's name with strictSuffix: each tool's schema
// rewritten into the strict subset of its model API when that loses
// nothing the tool accepts (internal/strictschema), and "strict" set on
// each tool to say whether it was. The tools served as they are, not
// strict, are listed in the body's nonStrict with the reason.
const strictSuffix = "+strict"

// etagOf is a menu's ETag in a format: its revision, and in a strict
// format the rewrite's version too, so that a catalog that rewrites
// schemas otherwise is not answered 304 with the menu an older one wrote.
func etagOf(revision, format string) string {
	if _, strict := baseFormat(format); strict {
		return `"` + revision + "-strict" + strictschema.Version + `"`
	}
	return `"` + revision + `"`
}

// strictFormats are the formats whose model API has a strict mode.
var strictFormats = []string{formatOpenAI, formatOpenAIResponses, formatAnthropic}

// baseFormat is a format without its strict variant's suffix, and
// whether it had it.
func baseFormat(format string) (string, bool) {
	return strings.CutSuffix(format, strictSuffix)
}

// nonStrictJSON names a tool a strict menu serves as it is, and why.
type nonStrictJSON struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// servedSchema is a tool's input schema as a format serves it, and, in
// a strict format, whether it is strict (nil otherwise).
type servedSchema struct {
	raw    []byte
	strict *bool
	// reason is why a strict format serves the schema as it is.
	reason string
}

var (
	strictTrue  = true
	strictFalse = false
)

// strictSchemas keeps rewritten schemas by dialect and tool definition
// hash, so that a menu rendered again after a change rewrites only the
// tools that changed (a rewrite costs tens of microseconds a tool). Past
// the bound the least recently used goes, which costs a rewrite.
var strictSchemas = lru.New(maxCachedSchemas)

// nullSchemas keeps parsed input schemas by tool definition hash for
// StripNulls, which REST execute runs on every call whose arguments hold
// a null; bounded like strictSchemas.
var nullSchemas = lru.New(4096)

// stripNulls drops the nulls a strict model sends for a tool's optional
// arguments (strictschema.StripNulls).
func stripNulls(tool *mcpv1alpha1.Tool, arguments json.RawMessage) json.RawMessage {
	if !bytes.Contains(arguments, []byte("null")) {
		return arguments
	}
	var sc *strictschema.Schema
	if cached, ok := nullSchemas.Get(tool.Hash); ok && tool.Hash != "" {
		sc = cached.(*strictschema.Schema)
	} else {
		// A schema that cannot be read is kept as nil, not read again.
		sc, _ = strictschema.ParseSchema(tool.InputSchema.Raw)
		if tool.Hash != "" {
			nullSchemas.Add(tool.Hash, sc)
		}
	}
	if sc == nil {
		return arguments
	}
	stripped, _ := sc.StripNulls(arguments)
	return stripped
}

// schemaIn is a tool's input schema as a format serves it.
func schemaIn(e *menu.Entry, format string) servedSchema {
	base, strict := baseFormat(format)
	if !strict {
		return servedSchema{raw: e.Tool.InputSchema.Raw}
	}
	dialect := strictschema.OpenAI
	if base == formatAnthropic {
		dialect = strictschema.Anthropic
	}
	key := string(dialect) + "\x00" + e.Tool.Hash
	var r strictschema.Result
	if cached, ok := strictSchemas.Get(key); ok && e.Tool.Hash != "" {
		r = cached.(strictschema.Result)
	} else {
		r = strictschema.Convert(e.Tool.InputSchema.Raw, dialect)
		if e.Tool.Hash != "" {
			strictSchemas.Add(key, r)
		}
	}
	if !r.Strict {
		return servedSchema{raw: e.Tool.InputSchema.Raw, strict: &strictFalse, reason: r.Reason}
	}
	return servedSchema{raw: r.Schema, strict: &strictTrue}
}
