// Package preflight checks a new revision against the cluster before rukpak applies it.
//
// CRDUpgradeSafety blocks a revision that would update an installed CustomResourceDefinition in a way
// that loses data or breaks existing custom resources:
//   - changing spec.scope;
//   - dropping a version that is still listed in status.storedVersions (objects stored in it could no
//     longer be read);
//   - a schema under which an existing custom resource is no longer valid: every existing object is
//     read in one served version, defaulted as the API server would default it under the new schema,
//     and validated against the new OpenAPI schema and its CEL rules (x-kubernetes-validations).
//
// CEL rules are evaluated as on a create: transition rules (those using oldSelf) are skipped, because
// an upgrade changes no object. The API server is more lenient on updates (validation ratcheting lets
// an unchanged invalid field through), so the preflight blocks upgrades that the API server would
// accept for objects that are never changed again: it errs on the side of the user's data. Rules
// whose cost exceeds the API server's runtime budget are reported as such, as the API server would.
//
// A BundleDeployment opts out with the annotation core.rukpak.io/skip-crd-upgrade-safety: "true".
//
// The package is public so that tools show the same findings before anything is applied:
// `kubectl olmv1 upgrade --preview` and `install --dry-run` call CheckCRDs on the objects rukpak
// would apply, and rukpak's controller blocks a revision with CRDUpgradeSafety, which is CheckCRDs
// turned into an error.
package preflight

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxReported bounds how many invalid objects one message names.
const maxReported = 3

// Finding is what the check says about one CustomResourceDefinition of a revision.
type Finding struct {
	// CRD is the CustomResourceDefinition's name.
	CRD string `json:"crd"`
	// Installed is false when the cluster has no CRD of that name yet: there is nothing to break.
	Installed bool `json:"installed"`
	// Problems are the unsafe changes (empty when the update is safe).
	Problems []string `json:"problems,omitempty"`
}

// Safe reports whether applying the CRD loses no data and breaks no existing object.
func (f Finding) Safe() bool { return len(f.Problems) == 0 }

// CheckCRDs checks every CustomResourceDefinition among objs against the installed one of the same
// name (other objects are ignored) and returns a Finding per CRD, in the order of objs. reader must
// read the cluster directly: the existing custom resources are listed. It only reads.
func CheckCRDs(ctx context.Context, reader client.Reader, objs []*unstructured.Unstructured) ([]Finding, error) {
	var findings []Finding
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		if gvk.Group != apiextensionsv1.GroupName || gvk.Kind != "CustomResourceDefinition" {
			continue
		}
		next := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, next); err != nil {
			return nil, fmt.Errorf("reading CustomResourceDefinition %s of the bundle: %w", u.GetName(), err)
		}
		cur := &apiextensionsv1.CustomResourceDefinition{}
		if err := reader.Get(ctx, client.ObjectKey{Name: next.Name}, cur); err != nil {
			if apierrors.IsNotFound(err) {
				findings = append(findings, Finding{CRD: next.Name})
				continue
			}
			return nil, fmt.Errorf("reading the installed CustomResourceDefinition %s: %w", next.Name, err)
		}
		p, err := Check(ctx, reader, cur, next)
		if err != nil {
			return nil, err
		}
		findings = append(findings, Finding{CRD: next.Name, Installed: true, Problems: p})
	}
	return findings, nil
}

// CRDUpgradeSafety returns the preflight: CheckCRDs, with every problem found turned into one error
// that says how to proceed. reader must read the cluster directly (custom resources are not in
// rukpak's label-scoped cache).
func CRDUpgradeSafety(reader client.Reader) func(ctx context.Context, objs []*unstructured.Unstructured) error {
	return func(ctx context.Context, objs []*unstructured.Unstructured) error {
		findings, err := CheckCRDs(ctx, reader, objs)
		if err != nil {
			return err
		}
		var problems []string
		for _, f := range findings {
			problems = append(problems, f.Problems...)
		}
		if len(problems) > 0 {
			return fmt.Errorf("CRD upgrade safety: %s; fix the bundle, or set the annotation %s=true on the BundleDeployment to apply it anyway",
				strings.Join(problems, "; "), SkipAnnotation)
		}
		return nil
	}
}

// SkipAnnotation on a BundleDeployment (value "true") makes rukpak skip CRDUpgradeSafety for it.
const SkipAnnotation = "core.rukpak.io/skip-crd-upgrade-safety"

// Check compares the installed CRD cur with next and, for versions both serve, validates the existing
// custom resources against next's schema. It returns what is unsafe.
func Check(ctx context.Context, reader client.Reader, cur, next *apiextensionsv1.CustomResourceDefinition) ([]string, error) {
	var problems []string
	if cur.Spec.Scope != next.Spec.Scope {
		problems = append(problems, fmt.Sprintf("CRD %s changes scope from %s to %s", cur.Name, cur.Spec.Scope, next.Spec.Scope))
	}
	nextVersions := map[string]*apiextensionsv1.CustomResourceDefinitionVersion{}
	for i := range next.Spec.Versions {
		nextVersions[next.Spec.Versions[i].Name] = &next.Spec.Versions[i]
	}
	for _, stored := range cur.Status.StoredVersions {
		if nextVersions[stored] == nil {
			problems = append(problems, fmt.Sprintf("CRD %s removes version %s, which is still in status.storedVersions (objects stored as %s would become unreadable)", cur.Name, stored, stored))
		}
	}
	if len(problems) > 0 {
		return problems, nil
	}
	for _, v := range cur.Spec.Versions {
		nv := nextVersions[v.Name]
		if !v.Served || nv == nil || !nv.Served || nv.Schema == nil || nv.Schema.OpenAPIV3Schema == nil {
			continue
		}
		p, err := validateExisting(ctx, reader, cur, v.Name, nv.Schema.OpenAPIV3Schema)
		if err != nil {
			return nil, err
		}
		problems = append(problems, p...)
		break // every object is readable in any served version: checking one version suffices for data
	}
	return problems, nil
}

func validateExisting(ctx context.Context, reader client.Reader, crd *apiextensionsv1.CustomResourceDefinition, version string, schema *apiextensionsv1.JSONSchemaProps) ([]string, error) {
	v, err := NewObjectValidator(schema)
	if err != nil {
		return nil, fmt.Errorf("the new schema of CRD %s version %s: %w", crd.Name, version, err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(crd.Spec.Group + "/" + version)
	list.SetKind(crd.Spec.Names.ListKind)
	if list.GetKind() == "" {
		list.SetKind(crd.Spec.Names.Kind + "List")
	}
	var bad []string
	total := 0
	opts := []client.ListOption{client.Limit(500)}
	for {
		if err := reader.List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("listing the existing %s to check them against the new schema: %w", crd.Spec.Names.Plural, err)
		}
		for i := range list.Items {
			item := &list.Items[i]
			errs := v.Validate(ctx, item.UnstructuredContent())
			if len(errs) == 0 {
				continue
			}
			total++
			if len(bad) < maxReported {
				name := item.GetName()
				if item.GetNamespace() != "" {
					name = item.GetNamespace() + "/" + name
				}
				bad = append(bad, fmt.Sprintf("%s %s: %s", crd.Spec.Names.Kind, name, errs.ToAggregate().Error()))
			}
		}
		if list.GetContinue() == "" {
			break
		}
		opts = []client.ListOption{client.Limit(500), client.Continue(list.GetContinue())}
	}
	if total == 0 {
		return nil, nil
	}
	sort.Strings(bad)
	return []string{fmt.Sprintf("the new schema of CRD %s version %s rejects %d existing object(s), e.g. %s", crd.Name, version, total, strings.Join(bad, ", "))}, nil
}

// ObjectValidator validates custom resources against one version's schema, as the API server does
// on a create: OpenAPI validation and CEL rules, after structural defaulting.
type ObjectValidator struct {
	openAPI    apiservervalidation.SchemaValidator
	structural *structuralschema.Structural
	cel        *cel.Validator // nil when the schema has no CEL rules
}

// NewObjectValidator compiles schema (a CRD version's openAPIV3Schema).
func NewObjectValidator(schema *apiextensionsv1.JSONSchemaProps) (*ObjectValidator, error) {
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(schema, internal, nil); err != nil {
		return nil, fmt.Errorf("converting it: %w", err)
	}
	openAPI, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return nil, fmt.Errorf("it is invalid: %w", err)
	}
	ss, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("it is not structural: %w", err)
	}
	if errs := structuralschema.ValidateStructural(nil, ss); len(errs) > 0 {
		return nil, fmt.Errorf("it is not structural: %w", errs.ToAggregate())
	}
	return &ObjectValidator{openAPI: openAPI, structural: ss, cel: cel.NewValidator(ss, true, celconfig.PerCallLimit)}, nil
}

// Validate returns what is wrong with obj (a custom resource as read from the API server) under the
// schema. obj is not modified.
func (v *ObjectValidator) Validate(ctx context.Context, obj map[string]interface{}) field.ErrorList {
	obj = runtime.DeepCopyJSON(obj)
	structuraldefaulting.Default(obj, v.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, obj, v.openAPI)
	if v.cel != nil {
		celErrs, _ := v.cel.Validate(ctx, nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}
