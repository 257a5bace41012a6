package migrate

import (
	"context"
	"fmt"
	"os"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
			// Any provider will do: the pod templates do not depend on who signs the serving
			// certificate (rukpak's own is configured on its Deployment, not readable here).
			Config: cfg, Cluster: cluster, CertProvider: bundlerender.SelfSigned,
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
		if supersededKinds[l.GetKind()] && (l.GetLabels()[LabelOwner] == csv || ownedByCSV(l, csv)) {
			o.Action = ActionDelete
		}
		out.Objects = append(out.Objects, o)
	}
	sort.SliceStable(out.Objects, func(i, j int) bool { return out.Objects[i].Action < out.Objects[j].Action })
	return out
}

// supersededKinds are the kinds OLM v0 generates from the CSV under names of its own (RBAC named
// after the CSV and a hash): OLM v1 creates the same rules under its names, and OLM v0's are deleted.
// OLM v0's webhook configurations are named "<generateName>-<random suffix>", OLM v1's
// "<generateName>": OLM v1's are created beside them, and OLM v0's deleted.
var supersededKinds = map[string]bool{"Role": true, "RoleBinding": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true}

// ownedByCSV says whether u has an ownerReference to the CSV named csv (OLM v0 labels some of what
// it generates, e.g. the Role and RoleBinding granting access to a webhook's serving Secret, only so).
func ownedByCSV(u *unstructured.Unstructured, csv string) bool {
	for _, r := range u.GetOwnerReferences() {
		if isCSVRef(r, csv) {
			return true
		}
	}
	return false
}

func isCSVRef(r metav1.OwnerReference, csv string) bool {
	return r.Kind == CSVOwnerKind && r.Name == csv
}

func nsName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}
