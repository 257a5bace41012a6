package preflight

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

func schemaOf(t *testing.T, doc string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	s := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.Unmarshal([]byte(doc), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func objOf(t *testing.T, doc string) map[string]interface{} {
	t.Helper()
	// As read from the API server: JSON numbers that are integers decode as int64.
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]interface{}{}
	if err := utiljson.Unmarshal(j, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A schema with CEL rules at the root of spec and on a field, a transition rule, and a default.
const celSchema = `
type: object
properties:
  spec:
    type: object
    x-kubernetes-validations:
    - rule: self.minReplicas <= self.maxReplicas
      message: minReplicas must not exceed maxReplicas
    - rule: self.mode == oldSelf.mode
      message: mode is immutable
    properties:
      minReplicas: {type: integer}
      maxReplicas: {type: integer, default: 3}
      mode: {type: string}
      name:
        type: string
        x-kubernetes-validations:
        - rule: self.startsWith('w-')
          message: name must start with w-
`

func TestObjectValidatorEvaluatesCELRules(t *testing.T) {
	v, err := NewObjectValidator(schemaOf(t, celSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, obj string
		want      []string // substrings of the errors; none means valid
	}{
		{name: "valid", obj: `{apiVersion: x.example.com/v1, kind: W, metadata: {name: a}, spec: {minReplicas: 1, maxReplicas: 2, name: w-a, mode: fast}}`},
		{name: "rule on spec", obj: `{apiVersion: x.example.com/v1, kind: W, metadata: {name: a}, spec: {minReplicas: 5, maxReplicas: 2}}`,
			want: []string{"spec: Invalid value", "minReplicas must not exceed maxReplicas"}},
		{name: "rule on a field", obj: `{apiVersion: x.example.com/v1, kind: W, metadata: {name: a}, spec: {minReplicas: 1, maxReplicas: 1, name: other}}`,
			want: []string{"spec.name", "name must start with w-"}},
		// maxReplicas is defaulted to 3 before the rules run, as the API server defaults on read.
		{name: "defaulted before CEL", obj: `{apiVersion: x.example.com/v1, kind: W, metadata: {name: a}, spec: {minReplicas: 2}}`},
		{name: "defaulted value violates", obj: `{apiVersion: x.example.com/v1, kind: W, metadata: {name: a}, spec: {minReplicas: 4}}`,
			want: []string{"minReplicas must not exceed maxReplicas"}},
		{name: "openAPI and CEL together", obj: `{apiVersion: x.example.com/v1, kind: W, metadata: {name: a}, spec: {minReplicas: "one", maxReplicas: 1, name: other}}`,
			want: []string{"spec.minReplicas: Invalid value", "name must start with w-"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := objOf(t, tc.obj)
			errs := v.Validate(t.Context(), obj)
			got := errs.ToAggregate()
			if len(tc.want) == 0 {
				if got != nil {
					t.Fatalf("want valid, got %v", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("want errors %q, got none", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("errors %q do not contain %q", got.Error(), w)
				}
			}
			if strings.Contains(got.Error(), "immutable") {
				t.Errorf("transition rules must not run without an old object: %v", got)
			}
		})
	}
	// Validate does not modify the object it is given (defaulting works on a copy).
	obj := objOf(t, `{apiVersion: x.example.com/v1, kind: W, metadata: {name: a}, spec: {minReplicas: 1}}`)
	_ = v.Validate(t.Context(), obj)
	if _, ok := obj["spec"].(map[string]interface{})["maxReplicas"]; ok {
		t.Error("Validate defaulted the caller's object")
	}
}

func TestNewObjectValidatorRejectsNonStructuralSchemas(t *testing.T) {
	_, err := NewObjectValidator(schemaOf(t, `{type: object, properties: {spec: {}}}`))
	if err == nil || !strings.Contains(err.Error(), "not structural") {
		t.Fatalf("want a not-structural error, got %v", err)
	}
}
