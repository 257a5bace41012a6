// Package preflight checks a new revision against the cluster before rukpak applies it.
//
// CRDUpgradeSafety blocks a revision that would update an installed CustomResourceDefinition in a way
// that loses data or breaks existing custom resources:
//   - changing spec.scope;
//   - dropping a version that is still listed in status.storedVersions (objects stored in it could no
//     longer be read);
//   - a schema under which an existing custom resource is no longer valid (every existing object is
//     validated against the new schema of the version it is read in).
//
// A BundleDeployment opts out with the annotation core.rukpak.io/skip-crd-upgrade-safety: "true".
package preflight

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxReported bounds how many invalid objects one message names.
const maxReported = 3

// CRDUpgradeSafety returns the preflight. reader must read the cluster directly (custom resources are
// not in rukpak's label-scoped cache).
func CRDUpgradeSafety(reader client.Reader) func(ctx context.Context, objs []*unstructured.Unstructured) error {
	return func(ctx context.Context, objs []*unstructured.Unstructured) error {
		var problems []string
		for _, u := range objs {
			gvk := u.GroupVersionKind()
			if gvk.Group != apiextensionsv1.GroupName || gvk.Kind != "CustomResourceDefinition" {
				continue
			}
			next := &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, next); err != nil {
				return fmt.Errorf("reading CustomResourceDefinition %s of the bundle: %w", u.GetName(), err)
			}
			cur := &apiextensionsv1.CustomResourceDefinition{}
			if err := reader.Get(ctx, client.ObjectKey{Name: next.Name}, cur); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return fmt.Errorf("reading the installed CustomResourceDefinition %s: %w", next.Name, err)
			}
			p, err := Check(ctx, reader, cur, next)
			if err != nil {
				return err
			}
			problems = append(problems, p...)
		}
		if len(problems) > 0 {
			return fmt.Errorf("CRD upgrade safety: %s; fix the bundle, or set the annotation core.rukpak.io/skip-crd-upgrade-safety=true on the BundleDeployment to apply it anyway",
				strings.Join(problems, "; "))
		}
		return nil
	}
}

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
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(schema, internal, nil); err != nil {
		return nil, fmt.Errorf("converting the new schema of %s %s: %w", crd.Name, version, err)
	}
	validator, _, err := validation.NewSchemaValidator(internal)
	if err != nil {
		return nil, fmt.Errorf("the new schema of CRD %s version %s is invalid: %w", crd.Name, version, err)
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
			errs := validation.ValidateCustomResource(field.NewPath(""), item.UnstructuredContent(), validator)
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
