package toolcatalog

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

// appendJSON appends the record as json.Marshal encodes it, byte for
// byte (TestAuditLineIsWhatJSONMarshalWrites), without reflection or a
// buffer of its own: every tool call writes one, and json.Marshal's cost
// was a twentieth of the catalog's own work on a call (BenchmarkCallPath).
// One difference: a duration that is not a number, which json.Marshal
// refuses (the line was lost), is written as 0.
func (r *AuditRecord) appendJSON(b []byte) []byte {
	b = append(b, `{"time":`...)
	b = wire.AppendString(b, r.Time)
	b = appendStringField(b, `,"requestId":`, r.RequestID)
	b = appendOptionalField(b, `,"traceId":`, r.TraceID)
	b = appendStringField(b, `,"user":`, r.User)
	if len(r.Groups) > 0 {
		b = append(b, `,"groups":[`...)
		for i, g := range r.Groups {
			if i > 0 {
				b = append(b, ',')
			}
			b = wire.AppendString(b, g)
		}
		b = append(b, ']')
	}
	b = appendOptionalField(b, `,"issuer":`, r.Issuer)
	b = appendStringField(b, `,"via":`, r.Via)
	b = appendOptionalField(b, `,"collection":`, r.Collection)
	b = appendOptionalField(b, `,"tool":`, r.Tool)
	b = appendOptionalField(b, `,"originalName":`, r.OriginalName)
	b = appendOptionalField(b, `,"server":`, r.Server)
	b = appendOptionalField(b, `,"method":`, r.Method)
	b = appendOptionalField(b, `,"prompt":`, r.Prompt)
	b = appendOptionalField(b, `,"resource":`, r.Resource)
	b = appendStringField(b, `,"outcome":`, r.Outcome)
	if r.Status != 0 {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(r.Status), 10)
	}
	if p := r.Policy; p != nil {
		b = appendStringField(b, `,"policy":{"decision":`, p.Decision)
		b = appendOptionalField(b, `,"rule":`, p.Rule)
		b = append(appendStringField(b, `,"mode":`, p.Mode), '}')
	}
	b = append(b, `,"durationMs":`...)
	b = appendJSONFloat(b, r.DurationMs)
	b = append(b, `,"resultBytes":`...)
	b = strconv.AppendInt(b, int64(r.ResultBytes), 10)
	return append(b, '}')
}

// appendStringField appends a key (with its comma and colon) and s.
func appendStringField(b []byte, key, s string) []byte {
	return wire.AppendString(append(b, key...), s)
}

// appendOptionalField is appendStringField for an omitempty field: an
// empty s appends nothing.
func appendOptionalField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendStringField(b, key, s)
}

// appendJSONFloat appends f as json.Marshal writes a float64: the
// shortest decimal that reads back as f, in exponent form outside
// [1e-6, 1e21). NaN and infinities, which JSON cannot hold (and
// json.Marshal refuses), are written as 0.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		quoted, _ := json.Marshal(f)
		return append(b, quoted...)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}
