package monitoring

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
)

// alertCase loads series (promqltest's `load` syntax, one sample a minute
// from time 0) and says which alerts of one rule fire at given minutes,
// each written as its labels other than alertname and severity.
type alertCase struct {
	name   string
	alert  string
	series string
	firing map[int][]string
}

// alertNames are the alerts alertCases cover; TestRules checks that it is
// every alert of the PrometheusRule.
var alertNames = []string{"MCPServerNotReady", "MCPCatalogErrorRatioHigh", "MCPCatalogCallLatencyHigh", "MCPDiscoveryFailing", "MCPToolsWithheld"}

var alertCases = []alertCase{{
	name:  "a server not Ready for 10 minutes fires, one that stays Ready does not",
	alert: "MCPServerNotReady",
	series: `
		mcp_mcpserver_ready{server="team-a/github"} 1x4 0x20
		mcp_mcpserver_ready{server="team-a/search"} 1x25`,
	firing: map[int][]string{4: {}, 14: {}, 16: {`{server="team-a/github"}`}},
}, {
	name:  "a server Ready again within 10 minutes does not fire",
	alert: "MCPServerNotReady",
	series: `
		mcp_mcpserver_ready{server="team-a/github"} 1x4 0x7 1x12`,
	firing: map[int][]string{10: {}, 16: {}, 20: {}},
}, {
	name:  "over 5% of calls failing for 5 minutes fires for that server; tool errors and callers' mistakes do not count",
	alert: "MCPCatalogErrorRatioHigh",
	series: `
		mcp_catalog_tool_calls_total{server="team-a/github",tool="search_issues",outcome="success"} 0+60x30
		mcp_catalog_tool_calls_total{server="team-a/github",tool="search_issues",outcome="upstream_timeout"} 0+6x30
		mcp_catalog_tool_calls_total{server="team-a/search",tool="query",outcome="success"} 0+60x30
		mcp_catalog_tool_calls_total{server="team-a/search",tool="query",outcome="tool_error"} 0+60x30
		mcp_catalog_tool_calls_total{server="team-a/search",tool="query",outcome="invalid_arguments"} 0+60x30
		mcp_catalog_tool_calls_total{server="team-a/search",tool="query",outcome="upstream_unreachable"} 0+1x30`,
	firing: map[int][]string{4: {}, 7: {`{server="team-a/github"}`}, 20: {`{server="team-a/github"}`}},
}, {
	name:  "p99 above 5 s for 10 minutes fires for the slow server only",
	alert: "MCPCatalogCallLatencyHigh",
	series: `
		mcp_catalog_tool_call_duration_seconds_bucket{server="team-a/slow",le="0.5"} 0+0x30
		mcp_catalog_tool_call_duration_seconds_bucket{server="team-a/slow",le="1"} 0+0x30
		mcp_catalog_tool_call_duration_seconds_bucket{server="team-a/slow",le="5"} 0+90x30
		mcp_catalog_tool_call_duration_seconds_bucket{server="team-a/slow",le="10"} 0+100x30
		mcp_catalog_tool_call_duration_seconds_bucket{server="team-a/slow",le="+Inf"} 0+100x30
		mcp_catalog_tool_call_duration_seconds_bucket{server="team-a/fast",le="0.5"} 0+99x30
		mcp_catalog_tool_call_duration_seconds_bucket{server="team-a/fast",le="1"} 0+100x30
		mcp_catalog_tool_call_duration_seconds_bucket{server="team-a/fast",le="5"} 0+100x30
		mcp_catalog_tool_call_duration_seconds_bucket{server="team-a/fast",le="10"} 0+100x30
		mcp_catalog_tool_call_duration_seconds_bucket{server="team-a/fast",le="+Inf"} 0+100x30`,
	firing: map[int][]string{10: {}, 12: {`{server="team-a/slow"}`}},
}, {
	name:  "most discoveries failing for 10 minutes fires once, for the whole fleet",
	alert: "MCPDiscoveryFailing",
	series: `
		mcp_discovery_duration_seconds_count{server="team-a/github",result="failure"} 0+6x30
		mcp_discovery_duration_seconds_count{server="team-a/search",result="failure"} 0+3x30
		mcp_discovery_duration_seconds_count{server="team-a/docs",result="success"} 0+1x30`,
	firing: map[int][]string{10: {}, 12: {`{}`}},
}, {
	name:  "a few servers failing discovery among many healthy ones does not fire",
	alert: "MCPDiscoveryFailing",
	series: `
		mcp_discovery_duration_seconds_count{server="team-a/github",result="failure"} 0+1x30
		mcp_discovery_duration_seconds_count{server="team-a/search",result="success"} 0+9x30`,
	firing: map[int][]string{12: {}, 25: {}},
}, {
	name:  "withheld tools for 5 minutes fire for that collection",
	alert: "MCPToolsWithheld",
	series: `
		mcp_toolcollection_tools_withheld{collection="team-a/assistant"} 0x2 2x20
		mcp_toolcollection_tools_withheld{collection="team-a/reviewer"} 0x22`,
	firing: map[int][]string{7: {}, 9: {`{collection="team-a/assistant"}`}},
}, {
	name:  "tools approved within 5 minutes do not fire",
	alert: "MCPToolsWithheld",
	series: `
		mcp_toolcollection_tools_withheld{collection="team-a/assistant"} 0x2 2x3 0x15`,
	firing: map[int][]string{6: {}, 12: {}},
}}

// TestAlerts evaluates each alert with Prometheus's rule engine, once a
// minute as a rule group would, and checks which alerts fire when.
func TestAlerts(t *testing.T) {
	defined := map[string]rulefmt.Rule{}
	for _, group := range loadRules(t).Groups {
		for _, rule := range group.Rules {
			defined[rule.Alert] = rule
		}
	}
	for _, tc := range alertCases {
		t.Run(tc.name, func(t *testing.T) {
			rule, ok := defined[tc.alert]
			if !ok {
				t.Fatalf("no alert %s in %s", tc.alert, rulesFile)
			}
			storage := promqltest.LoadedStorage(t, tc.load())
			engine := promqltest.NewTestEngine(t, false, 5*time.Minute, 1e6)
			query := rules.EngineQueryFunc(engine, storage)
			alerting := newAlertingRule(t, rule)
			last := slices.Max(keysOf(tc.firing))
			for minute := 0; minute <= last; minute++ {
				at := time.Unix(0, 0).UTC().Add(time.Duration(minute) * time.Minute)
				if _, err := alerting.Eval(context.Background(), 0, at, query, nil, 0); err != nil {
					t.Fatalf("evaluating %s at minute %d: %v", tc.alert, minute, err)
				}
				want, check := tc.firing[minute]
				if !check {
					continue
				}
				if got := firing(t, alerting); !slices.Equal(got, want) {
					t.Errorf("minute %d: %s fires for %v, want %v", minute, tc.alert, got, want)
				}
			}
		})
	}
}

func newAlertingRule(t *testing.T, rule rulefmt.Rule) *rules.AlertingRule {
	t.Helper()
	expr, err := promParser.ParseExpr(rule.Expr)
	if err != nil {
		t.Fatal(err)
	}
	return rules.NewAlertingRule(rule.Alert, expr, time.Duration(rule.For), time.Duration(rule.KeepFiringFor),
		labels.FromMap(rule.Labels), labels.FromMap(rule.Annotations), labels.EmptyLabels(), "", true,
		slog.New(slog.DiscardHandler))
}

// firing lists the firing alerts by their own labels, and checks that
// each one's annotations expanded (a template error leaves its message in
// the text) and name the labels that tell alerts apart.
func firing(t *testing.T, rule *rules.AlertingRule) []string {
	t.Helper()
	out := []string{}
	for _, alert := range rule.ActiveAlerts() {
		if alert.State != rules.StateFiring {
			continue
		}
		own := labels.NewBuilder(alert.Labels).Del(labels.AlertName, "severity").Labels()
		out = append(out, own.String())
		alert.Annotations.Range(func(a labels.Label) {
			if strings.Contains(a.Value, "<error expanding template") || strings.Contains(a.Value, "<no value>") {
				t.Errorf("%s: annotation %s did not expand: %s", rule.Name(), a.Name, a.Value)
			}
		})
		own.Range(func(l labels.Label) {
			if !strings.Contains(alert.Annotations.Get("summary"), l.Value) {
				t.Errorf("%s: the summary %q does not name %s", rule.Name(), alert.Annotations.Get("summary"), l)
			}
		})
	}
	slices.Sort(out)
	return out
}

func keysOf(m map[int][]string) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// load is the case's series as a promqltest load command: one sample a minute.
func (tc alertCase) load() string {
	var b strings.Builder
	b.WriteString("load 1m\n")
	for _, line := range strings.Split(strings.TrimSpace(tc.series), "\n") {
		b.WriteString("  " + strings.TrimSpace(line) + "\n")
	}
	return b.String()
}

// seriesOf lists the series a case loads, for the manager test to check
// that they are shaped like the real ones.
func (tc alertCase) seriesOf() ([]labels.Labels, error) {
	var out []labels.Labels
	for _, line := range strings.Split(strings.TrimSpace(tc.series), "\n") {
		lbls, _, err := promParser.ParseSeriesDesc(strings.TrimSpace(line))
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", tc.name, line, err)
		}
		out = append(out, lbls)
	}
	return out, nil
}
