package monitoring

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// knownSeries maps every series name a query may select to the label
// names it carries.
type knownSeries map[string]map[string]bool

// add records a metric as Prometheus stores it: a histogram is its
// _bucket (with le), _sum and _count series; a summary its quantiles,
// _sum and _count.
func (k knownSeries) add(name, kind string, labelNames []string) {
	with := func(series string, extra ...string) {
		if k[series] == nil {
			k[series] = map[string]bool{}
		}
		for _, l := range append(slices.Clone(labelNames), extra...) {
			k[series][l] = true
		}
	}
	switch kind {
	case "histogram":
		with(name+"_bucket", "le")
		with(name + "_sum")
		with(name + "_count")
	case "summary":
		with(name, "quantile")
		with(name + "_sum")
		with(name + "_count")
	default:
		with(name)
	}
}

// knownFromScrape is what a scrape shows.
func knownFromScrape(families map[string]*dto.MetricFamily) knownSeries {
	k := knownSeries{}
	for name, family := range families {
		var labelNames []string
		for _, m := range family.GetMetric() {
			for _, l := range m.GetLabel() {
				labelNames = append(labelNames, l.GetName())
			}
		}
		k.add(name, strings.ToLower(family.GetType().String()), labelNames)
	}
	return k
}

// knownFromNeeded is what METRICS-NEEDED.md promises.
func knownFromNeeded(needed map[string]neededMetric) knownSeries {
	k := knownSeries{}
	for _, m := range needed {
		k.add(m.name, m.kind, m.labels)
	}
	return k
}

// merged is k and others together.
func (k knownSeries) merged(others ...knownSeries) knownSeries {
	out := knownSeries{}
	for _, source := range append([]knownSeries{k}, others...) {
		for name, labelNames := range source {
			if out[name] == nil {
				out[name] = map[string]bool{}
			}
			maps.Copy(out[name], labelNames)
		}
	}
	return out
}

// selectedNames lists the series names an expression selects.
func selectedNames(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			names = append(names, selectorName(vs))
		}
		return nil
	})
	return names
}

func selectorName(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

// unknownUses lists what an expression names that k does not know: a
// series name, a label it matches on, or a label it groups by that none
// of the series below the aggregation carries.
func unknownUses(k knownSeries, expr parser.Expr) []string {
	var problems []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			name := selectorName(n)
			labelNames, ok := k[name]
			if !ok {
				problems = append(problems, fmt.Sprintf("metric %q is neither exported nor listed in METRICS-NEEDED.md", name))
				return nil
			}
			for _, m := range n.LabelMatchers {
				if m.Name != model.MetricNameLabel && !labelNames[m.Name] {
					problems = append(problems, fmt.Sprintf("%s has no label %q (it has %s)", name, m.Name, strings.Join(slices.Sorted(maps.Keys(labelNames)), ", ")))
				}
			}
		case *parser.AggregateExpr:
			below := map[string]bool{}
			for _, name := range selectedNames(n.Expr) {
				maps.Copy(below, k[name])
			}
			if len(below) == 0 {
				return nil // the unknown series below are reported on their own
			}
			for _, l := range n.Grouping {
				if !below[l] {
					problems = append(problems, fmt.Sprintf("%s groups by %q, which none of %s carries", n.Op, l, strings.Join(selectedNames(n.Expr), ", ")))
				}
			}
		}
		return nil
	})
	return problems
}
