package monitoring

import (
	"strings"
	"testing"
)

// TestRules: the PrometheusRule's groups pass Prometheus's own validation
// (as `promtool check rules` does), and every alert says how bad it is and
// what happened, in words a person on call can act on.
func TestRules(t *testing.T) {
	groups := loadRules(t)
	seen := map[string]bool{}
	count := 0
	for _, group := range groups.Groups {
		for _, rule := range group.Rules {
			if rule.Alert == "" {
				continue
			}
			count++
			if seen[rule.Alert] {
				t.Errorf("alert %s is defined twice", rule.Alert)
			}
			seen[rule.Alert] = true
			if severity := rule.Labels["severity"]; severity != "warning" && severity != "critical" && severity != "info" {
				t.Errorf("alert %s: severity label %q, want warning, critical or info", rule.Alert, severity)
			}
			for _, annotation := range []string{"summary", "description"} {
				if strings.TrimSpace(rule.Annotations[annotation]) == "" {
					t.Errorf("alert %s has no %s annotation", rule.Alert, annotation)
				}
			}
			if rule.For == 0 {
				t.Errorf("alert %s has no `for`: one bad evaluation would page", rule.Alert)
			}
		}
	}
	for _, name := range alertNames {
		if !seen[name] {
			t.Errorf("alert %s, which TestAlerts covers, is not in %s", name, rulesFile)
		}
		delete(seen, name)
	}
	for name := range seen {
		t.Errorf("alert %s has no case in TestAlerts", name)
	}
	if count == 0 {
		t.Fatalf("%s holds no alerts", rulesFile)
	}
}

// TestDashboard: the dashboard is JSON Grafana imports, and every query in
// it (panels and variables) is PromQL a Prometheus server parses.
func TestDashboard(t *testing.T) {
	d := loadDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Errorf("%s needs a title and a uid (so that provisioning updates it in place)", dashboardFile)
	}
	queries := d.queries()
	if len(queries) == 0 {
		t.Fatalf("%s holds no queries", dashboardFile)
	}
	for _, q := range queries {
		if strings.Contains(q.expr, "$") {
			t.Errorf("%s: %q uses a variable the test does not know; add it to grafanaVariables", q.where, q.expr)
			continue
		}
		if _, err := promParser.ParseExpr(q.expr); err != nil {
			t.Errorf("%s: %q does not parse: %v", q.where, q.expr, err)
		}
	}
	ids := map[int]bool{}
	var walk func([]panel)
	walk = func(panels []panel) {
		for _, p := range panels {
			if ids[p.ID] {
				t.Errorf("panel id %d (%s) is used twice", p.ID, p.Title)
			}
			ids[p.ID] = true
			walk(p.Panels)
		}
	}
	walk(d.Panels)
}
