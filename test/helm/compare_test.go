package helm

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kustomizeOnly are the objects config/default renders and the chart does
// not, each with the reason.
var kustomizeOnly = map[string]string{
	"Namespace " + namespace: "Helm installs into a namespace that exists before the release " +
		"(helm install --create-namespace); the README labels it for Pod Security as config/default does",
}

// chartLabels are the labels the chart may add to an object's metadata
// beyond config/default's: Helm's usual ones, and the name label on
// objects config/default leaves unlabelled.
var chartLabels = map[string]bool{
	"app.kubernetes.io/name":       true,
	"app.kubernetes.io/instance":   true,
	"app.kubernetes.io/version":    true,
	"app.kubernetes.io/managed-by": true,
	"helm.sh/chart":                true,
}

// differences lists every way the chart's objects differ from
// config/default's, one line per object or field, naming both sides.
func differences(kustomized, charted map[string]*unstructured.Unstructured) []string {
	var found []string
	for _, key := range slices.Sorted(maps.Keys(kustomized)) {
		chartObj, ok := charted[key]
		if _, expected := kustomizeOnly[key]; expected {
			if ok {
				found = append(found, fmt.Sprintf("%s: the chart renders it, but kustomizeOnly says it should not", key))
			}
			continue
		}
		if !ok {
			found = append(found, fmt.Sprintf("%s: config/default has it, the chart does not render it", key))
			continue
		}
		found = append(found, labelDifferences(key, kustomized[key].GetLabels(), chartObj.GetLabels())...)
		found = append(found, fieldDifferences(key, comparable(kustomized[key]), comparable(chartObj))...)
	}
	for _, key := range slices.Sorted(maps.Keys(charted)) {
		if _, ok := kustomized[key]; !ok {
			found = append(found, fmt.Sprintf("%s: the chart renders it, config/default does not have it", key))
		}
	}
	for key := range kustomizeOnly {
		if _, ok := kustomized[key]; !ok {
			found = append(found, fmt.Sprintf("%s: listed in kustomizeOnly, but config/default no longer has it", key))
		}
	}
	return found
}

// labelDifferences: every config/default label with its value, and nothing
// more than chartLabels.
func labelDifferences(key string, want, got map[string]string) []string {
	var found []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if got[name] != want[name] {
			found = append(found, fmt.Sprintf("%s: metadata.labels[%s]: config/default has %q, the chart has %q", key, name, want[name], got[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[name]; !ok && !chartLabels[name] {
			found = append(found, fmt.Sprintf("%s: metadata.labels[%s]: the chart adds %q, config/default has no such label", key, name, got[name]))
		}
	}
	return found
}

// comparable is the object without what the API server sets on its own
// (identity, timestamps, managed fields, status) and without labels,
// which labelDifferences compares.
func comparable(obj *unstructured.Unstructured) map[string]any {
	c := obj.DeepCopy().Object
	for _, field := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "labels"} {
		unstructured.RemoveNestedField(c, "metadata", field)
	}
	delete(c, "status")
	return c
}

// fieldDifferences compares two objects with go-cmp and reports each
// differing field by its path, e.g. spec.template.spec.containers[0].args[5].
func fieldDifferences(key string, want, got map[string]any) []string {
	var r fieldReporter
	cmp.Equal(want, got, cmp.Reporter(&r))
	for i := range r.found {
		r.found[i] = key + ": " + r.found[i]
	}
	return r.found
}

// fieldReporter is a cmp.Reporter that writes one line per differing leaf.
type fieldReporter struct {
	path  cmp.Path
	found []string
}

func (r *fieldReporter) PushStep(step cmp.PathStep) { r.path = append(r.path, step) }
func (r *fieldReporter) PopStep()                   { r.path = r.path[:len(r.path)-1] }

func (r *fieldReporter) Report(result cmp.Result) {
	if result.Equal() {
		return
	}
	want, got := r.path.Last().Values()
	r.found = append(r.found, fmt.Sprintf("%s: config/default has %s, the chart has %s", fieldPath(r.path), describe(want), describe(got)))
}

// fieldPath writes a cmp.Path as a reader of the manifest would.
func fieldPath(path cmp.Path) string {
	var b strings.Builder
	for _, step := range path {
		switch s := step.(type) {
		case cmp.MapIndex:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.Key().String())
		case cmp.SliceIndex:
			want, got := s.SplitKeys()
			index := want
			if index < 0 {
				index = got
			}
			fmt.Fprintf(&b, "[%d]", index)
		}
	}
	if b.Len() == 0 {
		return "(the whole object)"
	}
	return b.String()
}

// describe writes one side of a difference as JSON, or "nothing" when the
// field is absent on that side.
func describe(v reflect.Value) string {
	if !v.IsValid() {
		return "nothing"
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return fmt.Sprintf("%v", v.Interface())
	}
	return string(b)
}
