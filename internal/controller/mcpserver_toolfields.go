package controller

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// maxToolFieldBytes bounds each of a tool's icons, execution and _meta in
// status, in canonical JSON, as the API documents. Their size is the
// server's to choose (an icon may be a data: URI, _meta anything), and
// past the status budget every byte of them would cost a later tool its
// place: the bound is the description's default, room for a small inline
// icon, and far above what clients put in _meta or execution.
const maxToolFieldBytes = 8 << 10

// keepClientFields gives a status tool the icons, execution and _meta of
// its definition, in canonical form, and says which it left out: one past
// maxToolFieldBytes, or not of the shape the API gives it (icons a list of
// objects, the others objects), which the API server would refuse, and
// with it the whole status.
func keepClientFields(tool *mcpv1alpha1.Tool, canonical mcpclient.Tool) []string {
	var warnings []string
	fits := func(name string, raw json.RawMessage, shaped bool, shape string) bool {
		switch {
		case len(raw) == 0:
			return false
		case len(raw) > maxToolFieldBytes:
			warnings = append(warnings, fmt.Sprintf("the %s field was left out: %d bytes of JSON, over the limit of %d", name, len(raw), maxToolFieldBytes))
			return false
		case !shaped:
			warnings = append(warnings, fmt.Sprintf("the %s field was left out: not %s", name, shape))
			return false
		}
		return true
	}
	icons, iconsShaped := objects(canonical.Icons)
	if fits("icons", canonical.Icons, iconsShaped, "a list of JSON objects") && len(icons) > 0 {
		tool.Icons = make([]runtime.RawExtension, len(icons))
		for i, icon := range icons {
			tool.Icons[i] = runtime.RawExtension{Raw: icon}
		}
	}
	if fits("execution", canonical.Execution, isObject(canonical.Execution), "a JSON object") {
		tool.Execution = &runtime.RawExtension{Raw: canonical.Execution}
	}
	if fits("_meta", canonical.Meta, isObject(canonical.Meta), "a JSON object") {
		tool.Meta = &runtime.RawExtension{Raw: canonical.Meta}
	}
	return warnings
}

// isObject reports raw JSON that is an object.
func isObject(raw json.RawMessage) bool {
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}

// objects splits a JSON array of objects into its items,
// and reports whether raw is one.
func objects(raw json.RawMessage) ([]json.RawMessage, bool) {
	var items []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, false
	}
	for _, item := range items {
		if !isObject(item) {
			return nil, false
		}
	}
	return items, true
}
