package v1alpha1

// This file checks that `kubectl explain` answers with an example for every
// field a user writes: kubectl explain reads the descriptions of the CRDs that
// make manifests generates from the doc comments in this package.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// crdDir is where make manifests writes the CRDs, from this package's directory.
const crdDir = "../../config/crd/bases"

// examplePrefix opens the last paragraph of every spec field's description.
const examplePrefix = "Example:"

// explainWidth is the column at which kubectl explain wraps a description
// (wrap 76 in its plaintext template). It breaks a longer example line at a
// space, into YAML that a reader can no longer paste.
const explainWidth = 76

// specTypes maps each kind to the Go type of its spec, so that the walk knows
// which parts of the schema this package declares.
var specTypes = map[string]reflect.Type{
	"MCPServer":      reflect.TypeFor[MCPServerSpec](),
	"ToolCollection": reflect.TypeFor[ToolCollectionSpec](),
}

func TestEverySpecFieldExplainsWithAnExample(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil {
		t.Fatalf("listing the CRDs in %s: %v", crdDir, err)
	}
	if len(files) != len(specTypes) {
		t.Fatalf("found %d CRDs in %s, want one per kind in specTypes (%d)", len(files), crdDir, len(specTypes))
	}
	for _, file := range files {
		crd := readCRD(t, file)
		t.Run(crd.Spec.Names.Kind, func(t *testing.T) {
			specType, ok := specTypes[crd.Spec.Names.Kind]
			if !ok {
				t.Fatalf("%s defines kind %s, which specTypes does not name", file, crd.Spec.Names.Kind)
			}
			for _, version := range crd.Spec.Versions {
				spec, ok := version.Schema.OpenAPIV3Schema.Properties["spec"]
				if !ok {
					t.Fatalf("%s version %s has no spec in its schema", file, version.Name)
				}
				var problems []string
				walkFields(t, "spec", spec, specType, func(path string, field apiextensionsv1.JSONSchemaProps, goField reflect.StructField) {
					if problem := explainProblem(field.Description, goField); problem != "" {
						problems = append(problems, path+": "+problem)
					}
				})
				if len(problems) > 0 {
					t.Errorf("%s %s: %d spec fields do not explain themselves with an example; end the field's doc comment with a paragraph starting %q and run make manifests:\n  %s",
						crd.Spec.Names.Kind, version.Name, len(problems), examplePrefix, strings.Join(problems, "\n  "))
				}
			}
		})
	}
}

// explainProblem says what a field's description lacks, or "" when its last
// paragraph is an example: "Example:" and YAML that sets the field alone, as
// it would be written under its parent, in lines kubectl explain shows
// unbroken, and that decodes into the field's Go type (so an example cannot
// name a field that does not exist or give a value of the wrong type).
func explainProblem(description string, goField reflect.StructField) string {
	if strings.TrimSpace(description) == "" {
		return "no description"
	}
	paragraphs := strings.Split(strings.TrimSpace(description), "\n\n")
	last := paragraphs[len(paragraphs)-1]
	if !strings.HasPrefix(last, examplePrefix) {
		return "no example"
	}
	for line := range strings.SplitSeq(last, "\n") {
		if width := utf8.RuneCountInString(line); width > explainWidth {
			return fmt.Sprintf("example line of %d characters, which kubectl explain wraps at %d: %q", width, explainWidth, line)
		}
	}
	exampleJSON, err := yaml.YAMLToJSON([]byte(strings.TrimPrefix(last, examplePrefix)))
	if err != nil {
		return fmt.Sprintf("example is not YAML: %v", err)
	}
	var example map[string]json.RawMessage
	if err := json.Unmarshal(exampleJSON, &example); err != nil {
		return fmt.Sprintf("example is not a YAML mapping: %v", err)
	}
	name, _, _ := strings.Cut(goField.Tag.Get("json"), ",")
	value, ok := example[name]
	if !ok || len(example) != 1 {
		return fmt.Sprintf("example sets %v, not %s alone", slices.Sorted(maps.Keys(example)), name)
	}
	decoder := json.NewDecoder(bytes.NewReader(value))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(reflect.New(goField.Type).Interface()); err != nil {
		return fmt.Sprintf("example does not decode into %s: %v", goField.Type, err)
	}
	return ""
}

func TestExplainProblem(t *testing.T) {
	port := mustField(t, reflect.TypeFor[ServiceReference](), "port")
	service := mustField(t, reflect.TypeFor[MCPServerSpec](), "service")
	for _, tc := range []struct {
		name, description string
		field             reflect.StructField
		want              string // a part of the problem; "" for none
	}{
		{"one-line example", "port of the Service.\n\nExample: port: 8080", port, ""},
		{"block example", "service points at a Service.\n\nExample:\n  service:\n    name: github-mcp\n    port: 8080", service, ""},
		{"no description", "", port, "no description"},
		{"no example", "port of the Service, for example 8080.", port, "no example"},
		{"example not last", "Example: port: 8080\n\nport of the Service.", port, "no example"},
		{"example of another field", "port.\n\nExample: name: github-mcp", port, "not port alone"},
		{"example of two fields", "port.\n\nExample:\n  port: 8080\n  name: github-mcp", port, "not port alone"},
		{"value of the wrong type", "port.\n\nExample: port: http", port, "does not decode"},
		{"misspelled nested field", "service.\n\nExample:\n  service:\n    nmea: github-mcp", service, `unknown field "nmea"`},
		{"not YAML", "port.\n\nExample: port: [8080", port, "not YAML"},
		{"line kubectl explain wraps", "port.\n\nExample: port: 8080  # " + strings.Repeat("x", 70), port, "kubectl explain wraps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := explainProblem(tc.description, tc.field)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("explainProblem(%q) = %q, want a problem containing %q", tc.description, got, tc.want)
			}
		})
	}
}

func mustField(t *testing.T, goType reflect.Type, name string) reflect.StructField {
	t.Helper()
	field, ok := fieldByJSONName(goType, name)
	if !ok {
		t.Fatalf("%s has no field %s", goType, name)
	}
	return field
}

// walkFields calls check with every property of schema, which describes the Go
// struct goType, and descends (through items and additionalProperties) into the
// properties whose Go type this package declares. A field whose type is
// Kubernetes' own (corev1.EnvVar, metav1.LabelSelector, ...) is checked
// itself, but what is inside it carries Kubernetes' descriptions, which this
// package does not write.
func walkFields(t *testing.T, path string, schema apiextensionsv1.JSONSchemaProps, goType reflect.Type,
	check func(path string, field apiextensionsv1.JSONSchemaProps, goField reflect.StructField)) {
	t.Helper()
	for _, name := range jsonNames(goType) {
		if _, ok := schema.Properties[name]; !ok {
			t.Errorf("%s.%s is a field of %s but not in the CRD: regenerate with make manifests", path, name, goType)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(schema.Properties)) {
		field := schema.Properties[name]
		fieldPath := path + "." + name
		goField, ok := fieldByJSONName(goType, name)
		if !ok {
			t.Errorf("%s is in the CRD but %s has no field with that JSON name: regenerate with make manifests", fieldPath, goType)
			continue
		}
		check(fieldPath, field, goField)

		inner := elemType(goField.Type)
		if inner.Kind() != reflect.Struct || inner.PkgPath() != goType.PkgPath() {
			continue
		}
		switch {
		case field.Items != nil && field.Items.Schema != nil:
			walkFields(t, fieldPath+"[]", *field.Items.Schema, inner, check)
		case field.AdditionalProperties != nil && field.AdditionalProperties.Schema != nil:
			walkFields(t, fieldPath+"[key]", *field.AdditionalProperties.Schema, inner, check)
		default:
			walkFields(t, fieldPath, field, inner, check)
		}
	}
}

// fieldByJSONName finds the field of struct t that encodes as name.
func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool) {
	for field := range t.Fields() {
		jsonName, options, _ := strings.Cut(field.Tag.Get("json"), ",")
		if jsonName == name {
			return field, true
		}
		// An embedded struct's fields (json:",inline") are its parent's.
		if jsonName == "" && field.Anonymous && options == "inline" {
			if inner, ok := fieldByJSONName(field.Type, name); ok {
				return inner, true
			}
		}
	}
	return reflect.StructField{}, false
}

// jsonNames are the JSON names of a struct's fields, those of embedded
// structs (json:",inline") included.
func jsonNames(t reflect.Type) []string {
	var names []string
	for field := range t.Fields() {
		name, options, _ := strings.Cut(field.Tag.Get("json"), ",")
		switch {
		case name == "" && field.Anonymous && options == "inline":
			names = append(names, jsonNames(field.Type)...)
		case name != "" && name != "-":
			names = append(names, name)
		}
	}
	return names
}

// elemType is the type a field holds values of, behind pointers, slices and
// maps.
func elemType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	return t
}

func readCRD(t *testing.T, file string) apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("reading %s: %v", file, err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatalf("decoding %s as a CustomResourceDefinition: %v", file, err)
	}
	return crd
}
