package migrate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlerender"
)

// rukpak's owner label on what it applies (rukpak/internal/apply.OwnerNameLabel).
const rukpakOwnerNameLabel = "core.rukpak.io/owner-name"

// What migrate does with an object.
const (
	// ActionAdopt: OLM v0 created it and OLM v1 renders it under the same name: OLM v1 takes it
	// over in place, then OLM v0's marks are removed.
	ActionAdopt = "adopt"
	// ActionCreate: OLM v1 renders it and it does not exist yet (e.g. RBAC under OLM v1's names).
	ActionCreate = "create"
	// ActionDelete: OLM v0 generated it from the CSV and OLM v1 replaces it with an object of its own
	// name (RBAC): deleted once OLM v1 is Installed.
	ActionDelete = "delete after Installed"
	// ActionRelease: OLM v0's marks are removed and the object stays, no longer managed by OLM.
	ActionRelease = "release"
)

// Object is one object of the plan.
type Object struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Action    string `json:"action"`
}

func (o Object) key() string { return o.Kind + "/" + o.Namespace + "/" + o.Name }

func keyOf(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// Rendered is what OLM v1 would apply for the Operator, and how it meets what OLM v0 left.
type Rendered struct {
	Objects []Object
	// Differences are the differences between what OLM v0 runs and what OLM v1 renders for the same
	// bundle that change a running pod template; empty means the Deployments are adopted as they are.
	Differences []string
	// Blockers are objects OLM v1 could not adopt.
	Blockers []string
	// ControllerFlags are the adopted objects whose ownerReference to the CSV is marked controller.
	ControllerFlags []Object
}

// Render renders the installed CSV (and the CRDs it owns, as they are in the cluster) the way
// rukpak renders the bundle for op, and compares it with the live objects. OLM v0 copies the
// bundle's CSV into the cluster unchanged apart from the annotations its OperatorGroup adds and the
// status, so this is the bundle OLM v1 will install: the version is pinned to it.
func Render(ctx context.Context, st *V0, op *operatorsv1alpha1.Operator, mapper meta.RESTMapper) (*Rendered, error) {
	dir, err := os.MkdirTemp("", "kubectl-olmv1-migrate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := writeBundle(dir, st, op.Spec.PackageName); err != nil {
		return nil, err
	}
	var cluster *bundlerender.Cluster
	if mapper != nil {
		cluster = &bundlerender.Cluster{Mapper: mapper}
	}
	render := func() ([]*unstructured.Unstructured, error) {
		cfg := op.Spec.Config.DeepCopy()
		if cfg == nil {
			cfg = &rukpakv1alpha1.BundleConfig{}
		}
		cfg.WatchNamespaces = op.Spec.WatchNamespaces
		res, err := bundlerender.Render(ctx, dir, bundlerender.Options{
			Name: op.Name, InstallNamespace: op.Spec.InstallNamespace, Provisioner: rukpakv1alpha1.ProvisionerRegistry,
			Config: cfg, Cluster: cluster,
		})
		if err != nil {
			return nil, fmt.Errorf("rendering CSV %s as OLM v1 would: %w", st.CSV.Name, err)
		}
		return res.Objects, nil
	}
	objs, err := render()
	if err != nil {
		return nil, err
	}
	// OLM v0 copies every annotation of the CSV onto the pod templates, OLM v1 all but a few (e.g.
	// operatorframework.io/properties, which OLM v0 adds to the CSV itself): deploymentConfig carries
	// the rest, so that the pod templates stay as they run.
	if missing := MissingTemplateAnnotations(st.Marked, objs); len(missing) > 0 {
		dc := ensureDeploymentConfig(op)
		if dc.Annotations == nil {
			dc.Annotations = map[string]string{}
		}
		for k, v := range missing {
			dc.Annotations[k] = v
		}
		if objs, err = render(); err != nil {
			return nil, err
		}
	}
	return Compare(st.Marked, objs, op.Name, st.CSV.Name), nil
}

func ensureDeploymentConfig(op *operatorsv1alpha1.Operator) *rukpakv1alpha1.DeploymentConfig {
	if op.Spec.Config == nil {
		op.Spec.Config = &rukpakv1alpha1.BundleConfig{}
	}
	if op.Spec.Config.DeploymentConfig == nil {
		op.Spec.Config.DeploymentConfig = &rukpakv1alpha1.DeploymentConfig{}
	}
	return op.Spec.Config.DeploymentConfig
}

// MissingTemplateAnnotations are the annotations the live pod templates of the Deployments OLM v1
// renders carry and the rendered ones lack, when every such Deployment agrees on their values (pure).
// rukpak sets olm.targetNamespaces and olm.operatorNamespace itself; they are never returned.
func MissingTemplateAnnotations(marked, rendered []*unstructured.Unstructured) map[string]string {
	live := map[string]*unstructured.Unstructured{}
	for _, u := range marked {
		live[keyOf(u)] = u
	}
	out := map[string]string{}
	conflict := map[string]bool{}
	for _, r := range rendered {
		l, ok := live[keyOf(r)]
		if !ok || r.GetKind() != "Deployment" {
			continue
		}
		la, _, _ := unstructured.NestedStringMap(l.Object, "spec", "template", "metadata", "annotations")
		ra, _, _ := unstructured.NestedStringMap(r.Object, "spec", "template", "metadata", "annotations")
		for k, v := range la {
			if _, ok := ra[k]; ok || k == AnnotationTargetNamespaces || k == AnnotationOperatorNamespace {
				continue
			}
			if have, ok := out[k]; ok && have != v {
				conflict[k] = true
			}
			out[k] = v
		}
	}
	for k := range conflict {
		delete(out, k)
	}
	return out
}

// Compare classifies the rendered objects against the live objects OLM v0 marked (pure). csv is
// the installed CSV's name: an ownerReference to it that is marked controller does not block the
// adoption (its flag is cleared first, see clearControllerFlags); any other controller does.
func Compare(marked, rendered []*unstructured.Unstructured, operator, csv string) *Rendered {
	out := &Rendered{}
	live := map[string]*unstructured.Unstructured{}
	for _, u := range marked {
		live[keyOf(u)] = u
	}
	seen := map[string]bool{}
	for _, r := range rendered {
		k := keyOf(r)
		seen[k] = true
		o := Object{Kind: r.GetKind(), Namespace: r.GetNamespace(), Name: r.GetName(), Action: ActionCreate}
		l, ok := live[k]
		if ok {
			o.Action = ActionAdopt
			if c := metav1.GetControllerOfNoCopy(l); c != nil && !isCSVRef(*c, csv) {
				out.Blockers = append(out.Blockers, fmt.Sprintf("%s %s has a controller (%s %s): OLM v1 adopts only objects without one; remove that ownerReference's controller flag or delete the object", r.GetKind(), nsName(r), c.Kind, c.Name))
			} else if c != nil {
				out.ControllerFlags = append(out.ControllerFlags, o)
			}
			if owner := l.GetLabels()[rukpakOwnerNameLabel]; owner != "" && owner != operator {
				out.Blockers = append(out.Blockers, fmt.Sprintf("%s %s is owned by OLM v1's BundleDeployment %q: two installations cannot own one object", r.GetKind(), nsName(r), owner))
			}
			if r.GetKind() == "Deployment" {
				out.Differences = append(out.Differences, deploymentDiff(l, r)...)
			}
		}
		out.Objects = append(out.Objects, o)
	}
	for _, l := range marked {
		if seen[keyOf(l)] {
			continue
		}
		o := Object{Kind: l.GetKind(), Namespace: l.GetNamespace(), Name: l.GetName(), Action: ActionRelease}
		if supersededKinds[l.GetKind()] && l.GetLabels()[LabelOwner] != "" {
			o.Action = ActionDelete
		}
		out.Objects = append(out.Objects, o)
	}
	sort.SliceStable(out.Objects, func(i, j int) bool { return out.Objects[i].Action < out.Objects[j].Action })
	return out
}

// supersededKinds are the kinds OLM v0 generates from the CSV under names of its own (RBAC named
// after the CSV and a hash): OLM v1 creates the same rules under its names, and OLM v0's are deleted.
var supersededKinds = map[string]bool{"Role": true, "RoleBinding": true, "ClusterRole": true, "ClusterRoleBinding": true}

func isCSVRef(r metav1.OwnerReference, csv string) bool {
	return r.Kind == CSVOwnerKind && r.Name == csv
}

func nsName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

// deploymentDiff lists the differences between the live and the rendered pod templates that a
// server-side apply would write (and so roll out new pods): template labels and annotations, and
// per container the image, command, args and environment. Fields the API server defaults are not
// compared.
func deploymentDiff(liveU, renderedU *unstructured.Unstructured) []string {
	var live, rendered appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(liveU.Object, &live); err != nil {
		return []string{fmt.Sprintf("Deployment %s: %v", nsName(liveU), err)}
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(renderedU.Object, &rendered); err != nil {
		return []string{fmt.Sprintf("Deployment %s: %v", nsName(renderedU), err)}
	}
	return TemplateDiff("Deployment "+nsName(liveU), &live.Spec.Template, &rendered.Spec.Template)
}

// TemplateDiff compares two pod templates on what OLM writes into them (pure).
func TemplateDiff(what string, live, rendered *corev1.PodTemplateSpec) []string {
	var out []string
	diffMap := func(field string, l, r map[string]string) {
		for _, k := range sortedKeys(l, r) {
			lv, lok := l[k]
			rv, rok := r[k]
			switch {
			case lok && !rok:
				out = append(out, fmt.Sprintf("%s: pod template %s %s=%q is running but OLM v1 does not render it", what, field, k, lv))
			case !lok && rok:
				out = append(out, fmt.Sprintf("%s: pod template %s %s=%q would be added by OLM v1", what, field, k, rv))
			case lv != rv:
				out = append(out, fmt.Sprintf("%s: pod template %s %s is %q, OLM v1 renders %q", what, field, k, lv, rv))
			}
		}
	}
	diffMap("annotation", live.Annotations, rendered.Annotations)
	diffMap("label", live.Labels, rendered.Labels)
	if live.Spec.ServiceAccountName != rendered.Spec.ServiceAccountName {
		out = append(out, fmt.Sprintf("%s: serviceAccountName is %q, OLM v1 renders %q", what, live.Spec.ServiceAccountName, rendered.Spec.ServiceAccountName))
	}
	lc := map[string]corev1.Container{}
	for _, c := range append(append([]corev1.Container(nil), live.Spec.InitContainers...), live.Spec.Containers...) {
		lc[c.Name] = c
	}
	for _, r := range append(append([]corev1.Container(nil), rendered.Spec.InitContainers...), rendered.Spec.Containers...) {
		l, ok := lc[r.Name]
		if !ok {
			out = append(out, fmt.Sprintf("%s: container %s would be added by OLM v1", what, r.Name))
			continue
		}
		delete(lc, r.Name)
		cw := fmt.Sprintf("%s: container %s", what, r.Name)
		if l.Image != r.Image {
			out = append(out, fmt.Sprintf("%s: image is %q, OLM v1 renders %q", cw, l.Image, r.Image))
		}
		if !reflect.DeepEqual(nilIfEmpty(l.Command), nilIfEmpty(r.Command)) || !reflect.DeepEqual(nilIfEmpty(l.Args), nilIfEmpty(r.Args)) {
			out = append(out, fmt.Sprintf("%s: command or args differ (%q %q, OLM v1 renders %q %q)", cw, l.Command, l.Args, r.Command, r.Args))
		}
		if le, re := envString(l.Env), envString(r.Env); le != re {
			out = append(out, fmt.Sprintf("%s: env is [%s], OLM v1 renders [%s]", cw, le, re))
		}
	}
	for name := range lc {
		out = append(out, fmt.Sprintf("%s: container %s is running but OLM v1 does not render it", what, name))
	}
	sort.Strings(out)
	return out
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// envString writes env in order (its order is part of the pod template).
func envString(env []corev1.EnvVar) string {
	parts := make([]string, 0, len(env))
	for _, e := range env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			parts = append(parts, e.Name+"=<field "+e.ValueFrom.FieldRef.FieldPath+">")
		case e.ValueFrom != nil:
			parts = append(parts, e.Name+"=<valueFrom>")
		default:
			parts = append(parts, e.Name+"="+e.Value)
		}
	}
	return strings.Join(parts, " ")
}

func sortedKeys(ms ...map[string]string) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			set[k] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writeBundle writes a registry+v1 bundle of the installed CSV and the CRDs it owns into dir.
func writeBundle(dir string, st *V0, pkg string) error {
	for _, d := range []string{"manifests", "metadata"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	annotations := fmt.Sprintf("annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: %q\n", pkg)
	if err := os.WriteFile(filepath.Join(dir, "metadata", "annotations.yaml"), []byte(annotations), 0o644); err != nil {
		return err
	}
	csv := bundleCSV(st.CSV)
	if err := writeYAML(filepath.Join(dir, "manifests", "csv.yaml"), csv); err != nil {
		return err
	}
	owned := map[string]bool{}
	for _, d := range st.CSV.Spec.CustomResourceDefinitions.Owned {
		owned[d.Name] = true
	}
	for _, u := range st.Marked {
		if u.GetKind() != "CustomResourceDefinition" || !owned[u.GetName()] {
			continue
		}
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
			"metadata": map[string]any{"name": u.GetName()},
			"spec":     u.Object["spec"],
		}}
		if err := writeYAML(filepath.Join(dir, "manifests", u.GetName()+".yaml"), crd.Object); err != nil {
			return err
		}
	}
	return nil
}

// bundleCSV is the CSV as the bundle holds it: without status, cluster-assigned metadata and the
// annotations OLM v0's OperatorGroup controller adds.
func bundleCSV(in *v0.ClusterServiceVersion) *v0.ClusterServiceVersion {
	csv := &v0.ClusterServiceVersion{TypeMeta: in.TypeMeta, Spec: *in.Spec.DeepCopy()}
	csv.APIVersion, csv.Kind = GVKCSV.GroupVersion().String(), GVKCSV.Kind
	csv.Name = in.Name
	csv.Annotations = map[string]string{}
	for k, v := range in.Annotations {
		switch k {
		case AnnotationOperatorGroup, AnnotationOperatorNamespace, AnnotationTargetNamespaces, "olm.operatorGroupProvidedAPIs":
			continue
		}
		csv.Annotations[k] = v
	}
	return csv
}

func writeYAML(path string, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
