package apiservertest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Kind identifies the custom resource under test.
type Kind struct {
	Group    string
	Version  string
	Kind     string
	Resource string // plural, lowercase
}

// GroupVersionKind of the kind.
func (k Kind) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
}

// CRDName is the name of the kind's CustomResourceDefinition.
func (k Kind) CRDName() string { return k.Resource + "." + k.Group }

// Object builds an object of the kind named name whose spec is the YAML specYAML.
func (k Kind) Object(name, specYAML string) (*unstructured.Unstructured, error) {
	spec := map[string]any{}
	if err := yaml.Unmarshal([]byte(specYAML), &spec); err != nil {
		return nil, fmt.Errorf("spec of %s %q is not valid YAML: %w", k.Kind, name, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(k.GroupVersionKind())
	u.SetName(name)
	return u, nil
}

// Case is one object to validate.
type Case struct {
	// Name of the subtest.
	Name string
	// ObjectName is the object's metadata.name; "valid-name" when empty.
	ObjectName string
	// Spec is the YAML of the object's spec.
	Spec string
	// WantErrs is empty when the API server must accept the object. Otherwise the server must reject
	// it as Invalid, its error must contain every entry, and every reported cause must contain one
	// of them, so that a case fails when the object is rejected for another reason than the one tested.
	WantErrs []string
}

// CheckCases creates each case's object with a server-side dry run (validation, defaulting and CEL
// rules run; nothing is stored) and checks the API server's verdict.
func (s *Suite) CheckCases(t *testing.T, k Kind, cases []Case) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			name := tc.ObjectName
			if name == "" {
				name = "valid-name"
			}
			obj, err := k.Object(name, tc.Spec)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Client.Create(t.Context(), obj, client.DryRunAll)
			CheckVerdict(t, err, tc.WantErrs)
		})
	}
}

// celSkippedMessage is the cause the API server adds when it skips CEL rules because the object
// already failed OpenAPI schema validation.
const celSkippedMessage = "some validation rules were not checked because the object was invalid"

// CheckVerdict checks an API server's answer: err must be nil when wantErrs is empty, and otherwise
// an Invalid error mentioning every entry of wantErrs and no unrelated cause.
func CheckVerdict(t *testing.T, err error, wantErrs []string) {
	t.Helper()
	if len(wantErrs) == 0 {
		if err != nil {
			t.Fatalf("the API server rejected a valid object: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("the API server accepted an invalid object; want an error mentioning %q", wantErrs)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error mentioning %q, got %v", wantErrs, err)
	}
	t.Logf("rejected as expected: %v", err)
	for _, want := range wantErrs {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not mention %q:\n%v", want, err)
		}
	}
	var statusErr *apierrors.StatusError
	if !errors.As(err, &statusErr) || statusErr.ErrStatus.Details == nil {
		return
	}
	for _, cause := range statusErr.ErrStatus.Details.Causes {
		text := cause.Field + ": " + cause.Message
		if strings.Contains(text, celSkippedMessage) {
			continue // the API server skips CEL rules when OpenAPI validation already failed
		}
		if !containsAny(text, wantErrs) {
			t.Errorf("unexpected cause of rejection (the case tests something else): %s", text)
		}
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// SpecWith returns baseSpec (YAML) with the field at the dot-separated path set to the YAML value.
// It panics on invalid YAML: the inputs are test literals.
func SpecWith(baseSpec, path, value string) string {
	spec := map[string]any{}
	must(yaml.Unmarshal([]byte(baseSpec), &spec))
	var v any
	must(yaml.Unmarshal([]byte(value), &v))
	keys := strings.Split(path, ".")
	m := spec
	for _, key := range keys[:len(keys)-1] {
		next, ok := m[key].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[key] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
	out, err := yaml.Marshal(spec)
	must(err)
	return string(out)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// LongName returns a name of n characters made of 'a's, for length limits.
func LongName(n int) string { return strings.Repeat("a", n) }
