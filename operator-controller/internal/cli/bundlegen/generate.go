// Package bundlegen generates a registry+v1 bundle (manifests/ with a ClusterServiceVersion, the
// CRDs and other supported objects, and metadata/annotations.yaml) from plain manifests: the
// directory an operator's build writes, or the output of its kustomize overlay.
//
// The conversion is the inverse of what rukpak's registry+v1 renderer does, so that rendering the
// generated bundle gives back the Deployments and RBAC the manifests describe:
//
//   - Deployments become spec.install.spec.deployments (name, labels, spec as written).
//   - Roles and ClusterRoles that (Cluster)RoleBindings grant to the ServiceAccount of a Deployment
//     become that account's permissions (RoleBinding) or clusterPermissions (ClusterRoleBinding):
//     rules concatenated in input order, exact duplicates removed. Bindings to anything else (other
//     accounts, users, groups) are kept as they are, with a warning.
//   - The ServiceAccounts of Deployments are left to the CSV (rukpak creates them) unless they say
//     more than their name (labels, imagePullSecrets ...); other ServiceAccounts are kept.
//   - CRDs are copied and listed in spec.customresourcedefinitions.owned; custom resources of those
//     CRDs become the alm-examples annotation.
//   - Validating and mutating webhook configurations, and CRD conversion webhooks, served by a
//     Service of the input that selects a Deployment, become spec.webhookdefinitions; that Service
//     is left to rukpak, which renders its own.
//   - Every image of every container and init container is listed in spec.relatedImages.
//   - Other objects are copied when registry+v1 supports their kind (SupportedKinds); a Namespace
//     becomes the operatorframework.io/suggested-namespace annotation; cert-manager objects are
//     dropped (rukpak provides webhook certificates); anything else is an error naming it.
//
// Generation is deterministic: the same input and Options give the same bytes.
package bundlegen

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Result is a generated bundle.
type Result struct {
	// Files are the bundle's files by slash-separated path (manifests/..., metadata/...).
	Files map[string][]byte
	// Warnings are what the author should know about the conversion, one sentence each.
	Warnings []string
}

// Paths are the file paths of r, sorted.
func (r *Result) Paths() []string {
	out := make([]string, 0, len(r.Files))
	for p := range r.Files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Generate reads the manifests of dir (see Load) and generates the bundle they describe.
func Generate(dir string, o Options) (*Result, error) {
	s, err := o.parse()
	if err != nil {
		return nil, err
	}
	objs, err := Load(dir)
	if err != nil {
		return nil, err
	}
	return build(objs, s)
}

// Build generates the bundle the objects describe.
func Build(objs []Object, o Options) (*Result, error) {
	s, err := o.parse()
	if err != nil {
		return nil, err
	}
	return build(objs, s)
}

func build(objs []Object, s *settings) (*Result, error) {
	w := &warnings{}
	in, err := sortInput(objs, w)
	if err != nil {
		return nil, err
	}
	perms, err := absorbRBAC(in, w)
	if err != nil {
		return nil, err
	}
	hooks, err := absorbWebhooks(in, w)
	if err != nil {
		return nil, err
	}
	if len(in.deployments) == 0 {
		w.add("the manifests hold no Deployment: the bundle installs only its CRDs and manifests (a composite package that requires others)")
	}
	csv, err := buildCSV(in, perms, hooks, s)
	if err != nil {
		return nil, err
	}
	files, err := bundleFiles(in, csv, s)
	if err != nil {
		return nil, err
	}
	sort.Strings(w.list)
	return &Result{Files: files, Warnings: w.list}, nil
}

type warnings struct{ list []string }

func (w *warnings) add(format string, args ...any) {
	w.list = append(w.list, fmt.Sprintf(format, args...))
}

// inputs are the objects sorted by what becomes of them.
type inputs struct {
	deployments                                            []Object // sorted by name
	serviceAccounts                                        []Object
	roles, clusterRoles, roleBindings, clusterRoleBindings []Object
	crds                                                   []Object // sorted by name
	examples                                               []Object // custom resources of the CRDs
	webhookConfigs                                         []Object
	services                                               []Object
	other                                                  []Object // copied into manifests/ (after dropping what the CSV absorbs)
	namespaces                                             []string
}

// sortInput sorts objs by kind; unsupported kinds are an error naming every one of them.
func sortInput(objs []Object, w *warnings) (*inputs, error) {
	in := &inputs{}
	crdKinds := map[string]bool{} // group/Kind
	for _, o := range objs {
		if o.gk() == crdKind {
			g, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "group")
			k, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "names", "kind")
			crdKinds[g+"/"+k] = true
		}
	}
	var unsupported []string
	for _, o := range objs {
		gk := o.gk()
		switch {
		case gk == deploymentKind:
			in.deployments = append(in.deployments, o)
			if len(o.Obj.GetAnnotations()) > 0 {
				w.add("%s: metadata.annotations dropped (a CSV deployment has a name, labels and a spec); annotate the pod template instead", o.describe())
			}
		case gk == serviceAccountKind:
			in.serviceAccounts = append(in.serviceAccounts, o)
		case gk == roleKind:
			in.roles = append(in.roles, o)
		case gk == clusterRoleKind:
			in.clusterRoles = append(in.clusterRoles, o)
		case gk == roleBindingKind:
			in.roleBindings = append(in.roleBindings, o)
		case gk == clusterRoleBindingKind:
			in.clusterRoleBindings = append(in.clusterRoleBindings, o)
		case gk == crdKind:
			if v := o.Obj.GroupVersionKind().Version; v != "v1" {
				return nil, fmt.Errorf("%s is apiextensions.k8s.io/%s; registry+v1 bundles need apiextensions.k8s.io/v1 CRDs", o.describe(), v)
			}
			in.crds = append(in.crds, o)
		case crdKinds[gk.Group+"/"+gk.Kind]:
			in.examples = append(in.examples, o)
		case gk == validatingKind || gk == mutatingKind:
			in.webhookConfigs = append(in.webhookConfigs, o)
		case gk == serviceKind:
			in.services = append(in.services, o)
		case gk == namespaceKind:
			in.namespaces = append(in.namespaces, o.Obj.GetName())
			w.add("%s dropped: the install namespace is chosen when the bundle is installed (it is the bundle's suggested namespace)", o.describe())
		case gk.Group == certManagerGroup:
			w.add("%s dropped: rukpak provides the certificates of the bundle's webhooks itself", o.describe())
		case gk == csvKind:
			return nil, fmt.Errorf("%s: the input already holds a ClusterServiceVersion; generate writes one from plain manifests (remove it, or validate that bundle with `kubectl olmv1 bundle validate`)", o.describe())
		case supportedKinds[gk]:
			in.other = append(in.other, o)
		default:
			unsupported = append(unsupported, fmt.Sprintf("%s/%s (%s)", gk.Kind, o.Obj.GetName(), o.Source))
		}
	}
	if len(unsupported) > 0 {
		return nil, fmt.Errorf("registry+v1 bundles cannot carry %s; supported are Deployments, CRDs and their custom resources (as examples), webhook configurations, Namespaces (as the suggested namespace) and %s",
			strings.Join(unsupported, ", "), strings.Join(SupportedKinds(), ", "))
	}
	byName := func(l []Object) {
		sort.SliceStable(l, func(i, j int) bool { return l[i].Obj.GetName() < l[j].Obj.GetName() })
	}
	byName(in.deployments)
	byName(in.crds)
	for i := 1; i < len(in.deployments); i++ {
		if in.deployments[i].Obj.GetName() == in.deployments[i-1].Obj.GetName() {
			return nil, fmt.Errorf("two Deployments are named %q (%s and %s); a bundle installs into one namespace, so names must be unique",
				in.deployments[i].Obj.GetName(), in.deployments[i-1].Source, in.deployments[i].Source)
		}
	}
	return in, nil
}
