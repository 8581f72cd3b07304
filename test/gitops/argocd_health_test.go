// Package gitops checks what GitOps tools read from the operator's objects.
package gitops

import (
	"os"
	"path/filepath"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"
)

// argoHealth runs the health check the way Argo CD does (gopher-lua, the
// object as the global obj, the script's return value as the health).
func argoHealth(t *testing.T, object string) (status, message string) {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("..", "..", "config", "argocd", "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(object), &obj); err != nil {
		t.Fatal(err)
	}
	state := lua.NewState()
	defer state.Close()
	state.SetGlobal("obj", toLua(state, obj))
	fn, err := state.LoadString(string(script))
	if err != nil {
		t.Fatalf("the health check does not compile: %v", err)
	}
	state.Push(fn)
	if err := state.PCall(0, 1, nil); err != nil {
		t.Fatalf("the health check failed: %v", err)
	}
	hs, ok := state.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatal("the health check returned no table")
	}
	return hs.RawGetString("status").String(), hs.RawGetString("message").String()
}

func toLua(state *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := state.NewTable()
		for k, val := range v {
			t.RawSetString(k, toLua(state, val))
		}
		return t
	case []any:
		t := state.NewTable()
		for _, val := range v {
			t.Append(toLua(state, val))
		}
		return t
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case bool:
		return lua.LBool(v)
	}
	return lua.LNil
}

func TestArgoCDHealth(t *testing.T) {
	tests := []struct {
		name, object, status, message string
	}{
		{"no status yet", `
metadata: {generation: 1}
spec: {url: "http://x/mcp"}`, "Progressing", "Waiting for the controller"},
		{"Ready for the current generation", `
metadata: {generation: 2}
status:
  observedGeneration: 2
  conditions: [{type: Ready, status: "True", reason: ToolsDiscovered, message: Discovered 5 tools}]`, "Healthy", "Discovered 5 tools"},
		{"a stale Ready from the previous generation", `
metadata: {generation: 3}
status:
  observedGeneration: 2
  conditions: [{type: Ready, status: "True", reason: ToolsDiscovered, message: Discovered 5 tools}]`, "Progressing", "Waiting for the controller to handle generation 3"},
		{"reconciling, with the last generation's Ready kept", `
metadata: {generation: 2}
status:
  observedGeneration: 2
  conditions:
  - {type: Reconciling, status: "True", reason: Progressing, message: Discovering the tools of generation 2, observedGeneration: 2}
  - {type: Ready, status: "True", reason: ToolsDiscovered, message: Discovered 5 tools, observedGeneration: 1}`, "Progressing", "Discovering the tools of generation 2"},
		{"stalled", `
metadata: {generation: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Stalled, status: "True", reason: InvalidSpec, message: bad glob}
  - {type: Ready, status: "False", reason: InvalidSpec, message: bad glob}`, "Degraded", "bad glob"},
		{"not Ready", `
metadata: {generation: 1}
status:
  observedGeneration: 1
  conditions: [{type: Ready, status: "False", reason: Unreachable, message: refused the connection}]`, "Degraded", "refused the connection"},
		{"suspended", `
metadata: {generation: 1}
spec: {suspend: true}
status: {observedGeneration: 1}`, "Suspended", "Suspended: the last status is kept"},
		{"a Degraded collection still serving tools", `
metadata: {generation: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Degraded, status: "True", reason: ServersNotReady, message: "MCPServers not Ready: b"}
  - {type: Ready, status: "True", reason: MenuResolved, message: 3 tools from 1 of 2 servers}`, "Healthy", "3 tools from 1 of 2 servers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, message := argoHealth(t, tt.object)
			if status != tt.status || message != tt.message {
				t.Errorf("got %s %q, want %s %q", status, message, tt.status, tt.message)
			}
		})
	}
}
