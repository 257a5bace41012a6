package preview

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlerender"
)

// InstallDirect is the Plan of creating op, which installs a bundle directly (spec.source.type
// Bundle): no resolution runs. The plan holds the Operator (validated and defaulted by a dry run),
// the namespace and BundleDeployment a reconcile would write (internal/controller's own builders),
// and, for an image source, the bundle's objects as rukpak renders them, its RBAC and CRD
// upgrade-safety findings, and what the bundle declares (package, version, dependencies, each
// checked against the cluster as the reconciler checks it; none is installed). Git and HTTP sources
// are not fetched: the plan says so.
func (p *Planner) InstallDirect(ctx context.Context, op *operatorsv1alpha1.Operator) (*Plan, error) {
	dry, err := p.dryRunCreate(ctx, op, fmt.Sprintf("change its spec.source.bundle.source to install another bundle (kubectl edit operator %s)", op.Name))
	if err != nil {
		return nil, err
	}
	src := &dry.Spec.Source.Bundle.Source
	plan := &Plan{Action: "install", Operator: op.Name, Package: op.Spec.PackageName, Bundles: []PlannedBundle{}, Objects: []PlannedObject{}, RBAC: []RBACGrant{}, CRDs: []CRDFinding{}}
	opObj, err := operatorChange(proposal{action: "install", after: dry})
	if err != nil {
		return nil, err
	}
	plan.Objects = append(plan.Objects, opObj)
	ns := controller.InstallNamespace(dry, nil)
	if err := p.planNamespace(ctx, plan, dry, ns); err != nil {
		return nil, err
	}
	bd, err := controller.DesiredDirectBundleDeployment(dry, ns)
	if err != nil {
		plan.Failed = fmt.Sprintf("operator-controller would not install the bundle at %s: %v", controller.DirectSource(src), err)
		return finish(plan), nil
	}
	bd.SetGroupVersionKind(rukpakv1alpha1.GroupVersion.WithKind("BundleDeployment"))
	bdObj := PlannedObject{Action: "create", APIVersion: rukpakv1alpha1.GroupVersion.String(), Kind: "BundleDeployment", Name: bd.Name, Operator: op.Name, By: byOperatorController,
		Note: "installs the bundle directly: no catalog, no resolution"}
	if bdObj.Object, err = toUnstructured(bd); err != nil {
		return nil, err
	}
	plan.Objects = append(plan.Objects, bdObj)
	pb := PlannedBundle{Operator: op.Name, OperatorCreated: byCLI, Package: op.Spec.PackageName, Image: controller.DirectSource(src), Change: "install",
		Why: []string{"installed directly (spec.source.type Bundle, format " + string(dry.Spec.Source.Bundle.Format) + "): no catalog is read and nothing is resolved"}}
	if src.Image == nil {
		plan.Notes = append(plan.Notes, fmt.Sprintf("the preview pulls images only: the content of %s is not fetched, so the bundle's objects are not listed (render a local copy with `kubectl olmv1 bundle render DIR`)",
			controller.DirectSource(src)))
		plan.Bundles = append(plan.Bundles, pb)
		return finish(plan), nil
	}
	dir, remove, err := p.fetch(ctx, src.Image.Ref)
	if err != nil {
		return nil, err
	}
	defer remove()
	if dry.Spec.Source.Bundle.Format == operatorsv1alpha1.BundleFormatRegistryV1 {
		if err := p.declaredDependencies(ctx, plan, &pb, dry, dir); err != nil {
			return nil, err
		}
	}
	plan.Bundles = append(plan.Bundles, pb)
	res, err := bundlerender.Render(ctx, dir, bundlerender.Options{
		Name: bd.Name, InstallNamespace: bd.Spec.InstallNamespace, Provisioner: bd.Spec.ProvisionerClassName, Config: bd.Spec.Config, CertProvider: p.certProvider,
	})
	if err != nil {
		plan.Failed = fmt.Sprintf("rukpak would not install %s: %v", src.Image.Ref, err)
		return finish(plan), nil
	}
	for _, u := range res.Objects {
		plan.Objects = append(plan.Objects, p.compareLive(ctx, u, op.Name, bd.Name))
	}
	if err := p.addGrantsAndFindings(ctx, plan, &rendered{op: dry, bd: bd, objects: res.Objects}); err != nil {
		return nil, err
	}
	return finish(plan), nil
}

// declaredDependencies reads what the registry+v1 bundle in dir declares into pb (package, CSV name,
// version, and each dependency checked against the cluster) and notes the dependencies that are
// missing.
func (p *Planner) declaredDependencies(ctx context.Context, plan *Plan, pb *PlannedBundle, op *operatorsv1alpha1.Operator, dir string) error {
	facts, err := controller.ReadBundleFacts(os.DirFS(dir))
	if err != nil {
		plan.Notes = append(plan.Notes, fmt.Sprintf("the bundle's package, version and dependencies could not be read: %v", err))
		return nil
	}
	pb.Package, pb.Bundle, pb.Version = facts.Package, facts.CSVName, facts.Version
	if plan.Package == "" {
		plan.Package = facts.Package
	}
	plan.To = facts.Version
	bds := &rukpakv1alpha1.BundleDeploymentList{}
	listErr := p.c.List(ctx, bds)
	serves := func(_ context.Context, gvk schema.GroupVersionKind) (bool, error) {
		_, err := p.c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil {
			return true, nil
		}
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, err
	}
	for _, req := range facts.Requires {
		d := controller.CheckDeclared(ctx, req, op.Name, bds.Items, listErr, serves)
		pb.Why = append(pb.Why, fmt.Sprintf("declares %s %s: %s, not installed for it (%s)", d.Type, d.Value, d.Status, d.Message))
		if d.Status == operatorsv1alpha1.DependencyMissing {
			plan.Notes = append(plan.Notes, fmt.Sprintf("dependency %s %s is missing on the cluster and is not installed for a direct bundle: install it first (%s)", d.Type, d.Value, d.Message))
		}
	}
	if len(facts.Unsupported) > 0 {
		plan.Notes = append(plan.Notes, fmt.Sprintf("the bundle's %v dependencies are not checked", facts.Unsupported))
	}
	return nil
}
