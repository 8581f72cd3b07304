package toolcatalog

import (
	"bytes"
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// A menu of thousands of tools is rendered again after every change, in
// each format asked for, before its first byte goes out. encoding/json
// spends most of that reflecting over each tool and re-validating each
// schema; these append the same bytes directly: the schemas as status
// holds them (the API server stores compact, valid JSON), strings escaped
// as encoding/json escapes them. TestRenderMatchesEncodingJSON holds them
// to encoding/json's output byte for byte.

// appendMenu appends a view's menu body in a format.
func appendMenu(buf []byte, vw *view, format string) []byte {
	return appendMenuIn(slices.Grow(buf, menuSize(vw)), vw, format, nil)
}

// menuSize is about how long a view's menu body is, in any format: more
// than it is, as a rule, but less when strings need escaping or the menu
// has conflicts or annotations (which it does not count). Icons, execution
// and _meta count in every format, though only format mcp carries them:
// they are at most a few KiB a tool.
func menuSize(vw *view) int {
	size := len(vw.revision) + 64
	for i := range vw.menu.Tools {
		e := &vw.menu.Tools[i]
		size += len(e.Name) + len(e.Description) + len(e.Tool.Title) + len(e.Tool.InputSchema.Raw) + 96
		size += rawLen(e.Tool.OutputSchema) + rawLen(e.Tool.Execution) + rawLen(e.Tool.Meta)
		for _, icon := range e.Tool.Icons {
			size += len(icon.Raw) + 1
		}
	}
	return size
}

// rawLen is the length of an optional raw JSON field.
func rawLen(r *runtime.RawExtension) int {
	if r == nil {
		return 0
	}
	return len(r.Raw)
}

// appendMenuIn appends a view's menu body in a format, handing buf to
// flush, when it is set, whenever it holds renderChunk bytes or more;
// flush returns the buffer to go on with (emptied).
func appendMenuIn(buf []byte, vw *view, format string, flush func([]byte) []byte) []byte {
	buf = append(buf, `{"revision":`...)
	buf = wire.AppendString(buf, vw.revision)
	buf = append(buf, `,"tools":[`...)
	_, strict := baseFormat(format)
	var nonStrict []nonStrictJSON
	for i := range vw.menu.Tools {
		if i > 0 {
			buf = append(buf, ',')
		}
		e := &vw.menu.Tools[i]
		served := schemaIn(e, format)
		if served.reason != "" {
			nonStrict = append(nonStrict, nonStrictJSON{Name: e.Name, Reason: served.reason})
		}
		buf = appendTool(buf, e, format, served)
		if flush != nil && len(buf) >= renderChunk {
			buf = flush(buf)
		}
	}
	buf = append(buf, ']')
	if len(vw.menu.Conflicts) > 0 {
		buf = append(buf, `,"conflicts":[`...)
		for i, c := range vw.menu.Conflicts {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"name":`...)
			buf = wire.AppendString(buf, c.Name)
			buf = append(buf, `,"servers":`...)
			buf = appendStrings(buf, c.Servers)
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	if strict {
		buf = append(buf, `,"nonStrict":[`...)
		for i, n := range nonStrict {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"name":`...)
			buf = wire.AppendString(buf, n.Name)
			buf = append(buf, `,"reason":`...)
			buf = wire.AppendString(buf, n.Reason)
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	return append(buf, '}')
}

// appendTool appends what renderTool encodes to, with the tool's schema
// as the format serves it.
func appendTool(buf []byte, e *menu.Entry, format string, served servedSchema) []byte {
	schema := served.raw
	base, _ := baseFormat(format)
	switch base {
	case formatAnthropic, formatGemini:
		buf = append(buf, `{"name":`...)
		buf = wire.AppendString(buf, e.Name)
		buf = append(buf, `,"description":`...)
		buf = wire.AppendString(buf, e.Description)
		if format == formatGemini {
			buf = append(buf, `,"parametersJsonSchema":`...)
		} else {
			buf = append(buf, `,"input_schema":`...)
		}
		buf = appendRaw(buf, schema)
		buf = appendStrict(buf, served.strict)
	case formatOpenAIResponses:
		buf = append(buf, `{"type":"function","name":`...)
		buf = wire.AppendString(buf, e.Name)
		buf = append(buf, `,"description":`...)
		buf = wire.AppendString(buf, e.Description)
		buf = append(buf, `,"parameters":`...)
		buf = appendRaw(buf, schema)
		if served.strict != nil && *served.strict {
			buf = append(buf, `,"strict":true`...)
		} else {
			buf = append(buf, `,"strict":false`...)
		}
	case formatMCP:
		buf = append(buf, `{"name":`...)
		buf = wire.AppendString(buf, e.Name)
		if e.Tool.Title != "" {
			buf = append(buf, `,"title":`...)
			buf = wire.AppendString(buf, e.Tool.Title)
		}
		buf = append(buf, `,"description":`...)
		buf = wire.AppendString(buf, e.Description)
		buf = append(buf, `,"inputSchema":`...)
		buf = appendRaw(buf, schema)
		if e.Tool.OutputSchema != nil && len(e.Tool.OutputSchema.Raw) > 0 {
			buf = append(buf, `,"outputSchema":`...)
			buf = appendRaw(buf, e.Tool.OutputSchema.Raw)
		}
		if e.Tool.Annotations != nil {
			raw, _ := json.Marshal(e.Tool.Annotations)
			buf = append(buf, `,"annotations":`...)
			buf = append(buf, raw...)
		}
		if len(e.Tool.Icons) > 0 {
			buf = append(buf, `,"icons":[`...)
			for i, icon := range e.Tool.Icons {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = appendRaw(buf, icon.Raw)
			}
			buf = append(buf, ']')
		}
		if e.Tool.Execution != nil && len(e.Tool.Execution.Raw) > 0 {
			buf = append(buf, `,"execution":`...)
			buf = appendRaw(buf, e.Tool.Execution.Raw)
		}
		if e.Tool.Meta != nil && len(e.Tool.Meta.Raw) > 0 {
			buf = append(buf, `,"_meta":`...)
			buf = appendRaw(buf, e.Tool.Meta.Raw)
		}
	default:
		buf = append(buf, `{"type":"function","function":{"name":`...)
		buf = wire.AppendString(buf, e.Name)
		buf = append(buf, `,"description":`...)
		buf = wire.AppendString(buf, e.Description)
		buf = append(buf, `,"parameters":`...)
		buf = appendRaw(buf, schema)
		buf = appendStrict(buf, served.strict)
		buf = append(buf, '}')
	}
	return append(buf, '}')
}

// appendStrict appends a tool's strict member, when its format is strict.
func appendStrict(buf []byte, strict *bool) []byte {
	switch {
	case strict == nil:
		return buf
	case *strict:
		return append(buf, `,"strict":true`...)
	default:
		return append(buf, `,"strict":false`...)
	}
}

// appendRaw appends raw JSON as encoding/json writes a json.RawMessage:
// null when empty, compact, HTML's characters escaped in its strings. The
// API server hands schemas over compact, so the common case is a copy.
// JSON that is not valid (which the API server does not store) goes out as
// null, keeping the menu valid.
func appendRaw(buf, raw []byte) []byte {
	if len(raw) == 0 {
		return append(buf, "null"...)
	}
	if !needsRewrite(raw) {
		return append(buf, raw...)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return append(buf, "null"...)
	}
	escaped := bytes.NewBuffer(buf)
	json.HTMLEscape(escaped, compact.Bytes())
	return escaped.Bytes()
}

// needsRewrite reports raw JSON that encoding/json would not copy as it
// is: white space outside strings, or a byte json.HTMLEscape could change
// inside one (<, >, &, and 0xE2, the first byte of U+2028 and U+2029).
func needsRewrite(raw []byte) bool {
	inString, escaped := false, false
	for _, b := range raw {
		switch {
		case escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case inString && b == '"':
			inString = false
		case inString:
			if b == '<' || b == '>' || b == '&' || b == 0xE2 {
				return true
			}
		case b == '"':
			inString = true
		case b == ' ' || b == '\t' || b == '\n' || b == '\r':
			return true
		}
	}
	return false
}

func appendStrings(buf []byte, ss []string) []byte {
	if ss == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '[')
	for i, s := range ss {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = wire.AppendString(buf, s)
	}
	return append(buf, ']')
}
