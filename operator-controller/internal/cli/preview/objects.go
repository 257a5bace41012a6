package preview

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlerender"
	"github.com/olmv1/olmv1/rukpak/pkg/preflight"
)

// rukpak's owner label on what it applies (rukpak/internal/apply.OwnerNameLabel).
const rukpakOwnerNameLabel = "core.rukpak.io/owner-name"

// rendered is what one Operator's bundle would install.
type rendered struct {
	op      *operatorsv1alpha1.Operator
	bd      *rukpakv1alpha1.BundleDeployment // the BundleDeployment after the change
	objects []*unstructured.Unstructured
}

// operatorObjects adds to plan the objects a reconcile of op would write to install b: its install
// namespace when missing, its BundleDeployment, and the bundle's objects as rukpak renders and
// applies them, each compared with the live object. It returns what was rendered (nil when
// operator-controller would not get that far).
func (p *Planner) operatorObjects(ctx context.Context, st *State, plan *Plan, op *operatorsv1alpha1.Operator, b *operators.Bundle, planned map[string]bool) (*rendered, error) {
	have := st.bds[op.Name]
	// The reconciler's choice: an existing BundleDeployment's namespace wins.
	ns := controller.InstallNamespace(op, b)
	if have != nil && have.Spec.InstallNamespace != "" {
		ns = have.Spec.InstallNamespace
	}
	if !planned["Namespace/"+ns] {
		planned["Namespace/"+ns] = true
		if err := p.planNamespace(ctx, plan, op, ns); err != nil {
			return nil, err
		}
	}
	after, err := p.planBundleDeployment(ctx, plan, op, b, ns, have, st.cats)
	if err != nil || after == nil {
		return nil, err
	}

	objs, err := p.render(ctx, after)
	if err != nil {
		return nil, fmt.Errorf("Operator %s: rendering bundle %s (%s) as rukpak would: %w", op.Name, b.Name, b.Image, err)
	}
	keep := map[string]bool{}
	for _, u := range objs {
		keep[objectKey(u)] = true
		plan.Objects = append(plan.Objects, p.compareLive(ctx, u, op.Name, after.Name))
	}
	// An upgrade prunes what the installed bundle has and the new one does not (never CRDs).
	if have != nil && have.Spec.Source.Image != nil && have.Spec.Source.Image.Ref != b.Image {
		p.planPrune(ctx, plan, op, have, keep)
	}
	return &rendered{op: op, bd: after, objects: objs}, nil
}

// planNamespace adds to plan the creation of op's install namespace ns when it is missing (or that
// it cannot be read).
func (p *Planner) planNamespace(ctx context.Context, plan *Plan, op *operatorsv1alpha1.Operator, ns string) error {
	err := p.c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
	switch {
	case apierrors.IsNotFound(err):
		desired := controller.DesiredNamespace(op, ns)
		note := "install namespace, removed with the Operator"
		if len(desired.OwnerReferences) == 0 {
			note = "install namespace, kept when the Operator is deleted (deletionPolicy Orphan)"
		}
		obj, err := toUnstructured(desired)
		if err != nil {
			return err
		}
		plan.Objects = append(plan.Objects, PlannedObject{Action: "create", APIVersion: "v1", Kind: "Namespace", Name: ns,
			Operator: op.Name, By: byOperatorController, Note: note, Object: obj})
	case err != nil:
		plan.Objects = append(plan.Objects, PlannedObject{Action: "unknown", APIVersion: "v1", Kind: "Namespace", Name: ns,
			Operator: op.Name, By: byOperatorController, Note: fmt.Sprintf("cannot read it: %v", err)})
	}
	return nil
}

// planBundleDeployment adds to plan what a reconcile of op would do to its BundleDeployment (have,
// nil when there is none) to install b into ns, and returns the BundleDeployment after it. When
// operator-controller would not install b, it adds a note and returns nil.
func (p *Planner) planBundleDeployment(ctx context.Context, plan *Plan, op *operatorsv1alpha1.Operator, b *operators.Bundle, ns string,
	have *rukpakv1alpha1.BundleDeployment, cats []catalogdv1alpha1.Catalog) (*rukpakv1alpha1.BundleDeployment, error) {
	want, err := controller.DesiredBundleDeployment(op, b, ns, cats)
	if err != nil {
		plan.Notes = append(plan.Notes, fmt.Sprintf("Operator %s: operator-controller would not install bundle %s: %v", op.Name, b.Name, err))
		return nil, nil
	}
	want.SetGroupVersionKind(rukpakv1alpha1.GroupVersion.WithKind("BundleDeployment"))
	bdObj := PlannedObject{APIVersion: rukpakv1alpha1.GroupVersion.String(), Kind: "BundleDeployment", Name: want.Name, Operator: op.Name, By: byOperatorController}
	after := want
	if have == nil {
		bdObj.Action = "create"
	} else if after, err = p.updatedBundleDeployment(ctx, have, want, &bdObj); err != nil {
		return nil, err
	}
	if bdObj.Action != "unchanged" {
		if bdObj.Object, err = toUnstructured(after); err != nil {
			return nil, err
		}
	}
	plan.Objects = append(plan.Objects, bdObj)
	return after, nil
}

// updatedBundleDeployment is the existing BundleDeployment have after a reconcile merges want into
// it, as the API server would store it; it sets bdObj's action (unchanged or update), diff and note.
func (p *Planner) updatedBundleDeployment(ctx context.Context, have, want *rukpakv1alpha1.BundleDeployment, bdObj *PlannedObject) (*rukpakv1alpha1.BundleDeployment, error) {
	updated := have.DeepCopy()
	if !controller.MergeBundleDeployment(updated, want) {
		bdObj.Action = "unchanged"
		return have, nil
	}
	// The API server answers with the object as it would store it (defaults, validation).
	dry := updated.DeepCopy()
	if err := p.c.Update(ctx, dry, client.DryRunAll); err != nil {
		bdObj.Note = fmt.Sprintf("the API server refuses the update: %v", err)
	} else {
		updated = dry
	}
	bdObj.Action = "update"
	before, _ := toUnstructured(have)
	next, _ := toUnstructured(updated)
	var err error
	if bdObj.Diff, err = objectDiff(before, next, "BundleDeployment "+have.Name); err != nil {
		return nil, err
	}
	return updated, nil
}

// planPrune adds to plan the deletion of what the installed bundle of have rendered that the new
// bundle does not (keep holds the new bundle's object keys), never CRDs, and only objects rukpak
// applied for have.
func (p *Planner) planPrune(ctx context.Context, plan *Plan, op *operatorsv1alpha1.Operator, have *rukpakv1alpha1.BundleDeployment, keep map[string]bool) {
	old, err := p.render(ctx, have)
	if err != nil {
		plan.Notes = append(plan.Notes, fmt.Sprintf("Operator %s: could not render the installed bundle %s to find what the upgrade removes: %v", op.Name, have.Spec.Source.Image.Ref, err))
	}
	for _, u := range old {
		if keep[objectKey(u)] || isCRD(u) {
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(u.GroupVersionKind())
		if err := p.c.Get(ctx, client.ObjectKeyFromObject(u), live); err != nil || live.GetLabels()[rukpakOwnerNameLabel] != have.Name {
			continue // gone already, or not rukpak's for this BundleDeployment: left alone
		}
		plan.Objects = append(plan.Objects, PlannedObject{Action: "delete", APIVersion: u.GetAPIVersion(), Kind: u.GetKind(),
			Namespace: u.GetNamespace(), Name: u.GetName(), Operator: op.Name, By: byRukpak, Note: "the new bundle no longer has it (pruned)"})
	}
}

// render renders the bundle bd installs exactly as rukpak would for bd: its provisioner, install
// namespace and config, the owner labels of bd's name, in apply order.
func (p *Planner) render(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment) ([]*unstructured.Unstructured, error) {
	if bd.Spec.Source.Image == nil {
		return nil, fmt.Errorf("BundleDeployment %s has no image source", bd.Name)
	}
	dir, remove, err := p.fetch(ctx, bd.Spec.Source.Image.Ref)
	if err != nil {
		return nil, err
	}
	defer remove()
	res, err := bundlerender.Render(ctx, dir, bundlerender.Options{
		Name: bd.Name, InstallNamespace: bd.Spec.InstallNamespace, Provisioner: bd.Spec.ProvisionerClassName,
		Config: bd.Spec.Config, CertProvider: p.certProvider,
	})
	if err != nil {
		return nil, err
	}
	return res.Objects, nil
}

// compareLive says what applying u (rendered for BundleDeployment owner) would do to the live
// object: create it, change it (with the diff of a server-side apply dry run, field manager rukpak,
// forced, as rukpak applies), or nothing.
func (p *Planner) compareLive(ctx context.Context, u *unstructured.Unstructured, opName, owner string) PlannedObject {
	po := PlannedObject{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Operator: opName, By: byRukpak}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	err := p.c.Get(ctx, client.ObjectKeyFromObject(u), live)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		po.Action, po.Object = "create", u
		return po
	case err != nil:
		po.Action, po.Note = "unknown", fmt.Sprintf("cannot read the live object: %v", err)
		return po
	}
	if o := live.GetLabels()[rukpakOwnerNameLabel]; o != owner {
		who := "nobody (not installed by OLM)"
		if o != "" {
			who = "BundleDeployment " + o
		}
		po.Note = fmt.Sprintf("exists and belongs to %s: rukpak applies it only if the collisionPolicy allows it (Prevent, the default, refuses with ObjectConflict)", who)
	}
	after := u.DeepCopy()
	applyErr := p.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(after), client.FieldOwner(byRukpak), client.ForceOwnership, client.DryRunAll)
	if applyErr != nil {
		// Compare the fields the bundle sets instead: what the dry run would have shown, except
		// fields rukpak set before and no longer sets.
		after = u.DeepCopy()
		live = &unstructured.Unstructured{Object: project(live.Object, u.Object).(map[string]any)}
		po.Note = joinNote(po.Note, fmt.Sprintf("server-side apply dry run failed (%v): compared the fields the bundle sets with the live object", applyErr))
	}
	diff, err := objectDiff(live, after, fmt.Sprintf("%s %s", u.GetKind(), nsName(u)))
	if err != nil {
		po.Action, po.Note = "unknown", joinNote(po.Note, err.Error())
		return po
	}
	if diff == "" {
		po.Action = "unchanged"
		return po
	}
	po.Action, po.Diff, po.Object = "update", diff, u
	return po
}

// crdFindings runs rukpak's CRD upgrade-safety check on the CRDs r installs.
func (p *Planner) crdFindings(ctx context.Context, r *rendered) ([]CRDFinding, error) {
	findings, err := preflight.CheckCRDs(ctx, p.c, r.objects)
	if err != nil {
		return nil, fmt.Errorf("Operator %s: CRD upgrade safety: %w", r.op.Name, err)
	}
	skipped := r.bd.Annotations[preflight.SkipAnnotation] == "true"
	out := make([]CRDFinding, 0, len(findings))
	for _, f := range findings {
		out = append(out, CRDFinding{Operator: r.op.Name, Finding: f, Skipped: skipped})
	}
	return out, nil
}

// project keeps of live only the fields want has (recursively through objects; lists are kept whole).
func project(live, want any) any {
	lm, ok1 := live.(map[string]any)
	wm, ok2 := want.(map[string]any)
	if !ok1 || !ok2 {
		return live
	}
	out := map[string]any{}
	for k, wv := range wm {
		if lv, ok := lm[k]; ok {
			out[k] = project(lv, wv)
		}
	}
	return out
}

func objectKey(u *unstructured.Unstructured) string {
	return u.GroupVersionKind().GroupKind().String() + "/" + u.GetNamespace() + "/" + u.GetName()
}

func isCRD(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition"
}

func nsName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
