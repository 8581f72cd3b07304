// Package monitoring checks config/prometheus against Prometheus itself:
// the rules parse and validate with Prometheus's rule parser, every alert
// fires when it should and stays silent otherwise (evaluated by
// Prometheus's rule engine on series shaped like the real ones), the
// dashboard's queries parse, and every metric and label the rules and the
// dashboard name is one a real manager exports (scraped from a run against
// a real control plane) or one config/prometheus/METRICS-NEEDED.md lists.
//
// It is a module of its own so that Prometheus's dependencies stay out of
// the operator's go.mod; it runs the operator's binaries, built from the
// repository, rather than importing its packages.
package monitoring

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

var (
	repoRoot      = filepath.Join("..", "..")
	promDir       = filepath.Join(repoRoot, "config", "prometheus")
	rulesFile     = filepath.Join(promDir, "prometheusrule.yaml")
	dashboardFile = filepath.Join(promDir, "grafana-dashboard.json")
	neededFile    = filepath.Join(promDir, "METRICS-NEEDED.md")
)

// promParser parses as a Prometheus server does by default: no experimental
// functions or syntax.
var promParser = parser.NewParser(parser.Options{})

// loadRules reads the PrometheusRule and hands its groups to Prometheus's
// own rule file parser, which validates names, durations, expressions and
// annotation templates.
func loadRules(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var object struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Groups json.RawMessage `json:"groups"`
		} `json:"spec"`
	}
	// The object's other fields are the CRD's to validate (the manager test
	// dry-runs it); the groups are Prometheus's.
	if err := yaml.Unmarshal(raw, &object); err != nil {
		t.Fatalf("reading %s: %v", rulesFile, err)
	}
	if object.APIVersion != "monitoring.coreos.com/v1" || object.Kind != "PrometheusRule" {
		t.Fatalf("%s is a %s %s, want a monitoring.coreos.com/v1 PrometheusRule", rulesFile, object.APIVersion, object.Kind)
	}
	groups, err := yaml.JSONToYAML([]byte(`{"groups":` + string(object.Spec.Groups) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	parsed, errs := rulefmt.Parse(groups, false, model.UTF8Validation, promParser, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("%s: %v", rulesFile, err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	return parsed
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			AllValue string `json:"allValue"`
			Query    any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// query is one PromQL query of the dashboard, variables substituted.
type query struct {
	where string // panel title and refId, for messages
	expr  string
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s is not valid JSON: %v", dashboardFile, err)
	}
	return d
}

// grafanaVariables replaces Grafana's own and the dashboard's variables
// with what Grafana would put there: a window for the intervals, "match
// everything" for a variable set to All.
var grafanaVariables = strings.NewReplacer(
	"$__rate_interval", "5m", "${__rate_interval}", "5m",
	"$__interval", "1m", "${__interval}", "1m",
	"$__range", "1h", "${__range}", "1h",
	"$server", ".*", "${server}", ".*",
)

// queries lists every query of the dashboard: panel targets and the query
// variables (label_values(metric, label) becomes group by (label) (metric)).
func (d dashboard) queries() []query {
	var out []query
	var walk func([]panel)
	walk = func(panels []panel) {
		for _, p := range panels {
			for _, target := range p.Targets {
				out = append(out, query{where: p.Title + " (" + target.RefID + ")", expr: grafanaVariables.Replace(target.Expr)})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	labelValues := regexp.MustCompile(`^label_values\(\s*(.+?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		text, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			text, _ = m["query"].(string)
		}
		where := "variable $" + v.Name
		if match := labelValues.FindStringSubmatch(text); match != nil {
			out = append(out, query{where: where, expr: "group by (" + match[2] + ") (" + grafanaVariables.Replace(match[1]) + ")"})
		} else {
			out = append(out, query{where: where, expr: "label_values query " + text + " (not understood)"})
		}
	}
	return out
}

// neededMetric is one row of METRICS-NEEDED.md.
type neededMetric struct {
	name, kind string
	labels     []string
}

// loadNeeded reads the table of METRICS-NEEDED.md.
func loadNeeded(t *testing.T) map[string]neededMetric {
	t.Helper()
	raw, err := os.ReadFile(neededFile)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \\| (counter|gauge|histogram) \\| ([^|]*) \\|")
	needed := map[string]neededMetric{}
	for _, line := range strings.Split(string(raw), "\n") {
		match := row.FindStringSubmatch(line)
		if match == nil {
			continue
		}
		m := neededMetric{name: match[1], kind: match[2]}
		for _, l := range strings.Split(match[3], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" {
				m.labels = append(m.labels, l)
			}
		}
		needed[m.name] = m
	}
	return needed
}
