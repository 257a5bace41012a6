package cli

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/catalogs"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlerender"
)

// previewFlags are the flags of install --dry-run and upgrade --preview that concern the preview.
type previewFlags struct {
	insecure     bool
	certProvider string
}

func (f *previewFlags) bind(cmd interface {
	BoolVar(*bool, string, bool, string)
	StringVar(*string, string, string, string)
}) {
	cmd.BoolVar(&f.insecure, "insecure", false, "preview: pull bundle images over plain HTTP")
	cmd.StringVar(&f.certProvider, "cert-provider", bundlerender.SelfSigned, "preview: the webhook certificate provider rukpak runs with: selfSigned (rukpak's default; the preview's CA is a throwaway one, so webhook certificates always differ), certManager or openshiftServiceCA")
}

// newPlanner returns a planner that reads through c, made read-only, and pulls bundle images.
func (o *options) newPlanner(c client.Client, f previewFlags) *planner {
	ro := readOnlyClient{Client: c}
	return &planner{
		c:      ro,
		reader: &catalogs.MetadataReader{Client: ro},
		fetch: func(ctx context.Context, image string) (string, func(), error) {
			if o.pull != nil {
				return o.pull(ctx, image, f.insecure)
			}
			return pullToDir(ctx, image, f.insecure)
		},
		certProvider: f.certProvider,
		now:          time.Now,
	}
}

// build computes the Plan of a change.
func (p *planner) build(ctx context.Context, st *clusterState, pr proposal) (*Plan, error) {
	plan := &Plan{Action: pr.action, Operator: pr.after.Name, Package: pr.after.Spec.PackageName, Bundles: []PlannedBundle{}, Objects: []PlannedObject{}, RBAC: []RBACGrant{}, CRDs: []CRDFinding{}}
	baseline := st.resolve(ctx, st.ops)
	res, err := p.resolveChange(ctx, st, pr)
	if err != nil {
		return nil, err
	}
	if installed := installedOf(st, pr.after); installed != nil {
		plan.From = installed.Version
	}

	// The command's own write comes first.
	opObj, err := operatorChange(pr)
	if err != nil {
		return nil, err
	}
	plan.Objects = append(plan.Objects, opObj)
	byName := map[string]*operatorsv1alpha1.Operator{}
	for i := range res.ops {
		byName[res.ops[i].Name] = &res.ops[i]
	}
	plan.Notes = append(plan.Notes, res.notes...)

	o := res.outcomes[pr.after.Name]
	if o.Bundle == nil {
		plan.Failed = o.Message
		if plan.Failed == "" {
			plan.Failed = "the Operator is not part of the resolution"
		}
		return finish(plan), nil
	}
	plan.To = o.Bundle.Version
	var affected []string
	plan.Bundles, affected = planBundles(st, pr, res, baseline)
	for _, n := range sortedKeys(res.outcomes) {
		if n != pr.after.Name && res.outcomes[n].Bundle == nil && baseline[n].Bundle != nil {
			plan.Notes = append(plan.Notes, fmt.Sprintf("Operator %s would no longer resolve (its installed bundle stays): %s", n, res.outcomes[n].Message))
		}
	}
	planned := map[string]bool{}
	for _, n := range affected {
		// A reconcile creates the Operator of a dependency after the dependent's BundleDeployment;
		// then that Operator's own reconcile writes its namespace and BundleDeployment.
		if res.created[n] {
			u, err := toUnstructured(byName[n])
			if err != nil {
				return nil, err
			}
			plan.Objects = append(plan.Objects, PlannedObject{Action: "create", APIVersion: operatorsv1alpha1.GroupVersion.String(), Kind: "Operator", Name: n,
				Operator: n, By: byOperatorController, Note: "installs a dependency (dependencyPolicy Install)", Object: u})
		}
		r, err := p.operatorObjects(ctx, st, plan, byName[n], res.outcomes[n].Bundle, planned)
		if err != nil {
			return nil, err
		}
		if r == nil {
			continue
		}
		grants, err := rbacGrants(ctx, p.c, r)
		if err != nil {
			return nil, err
		}
		plan.RBAC = append(plan.RBAC, grants...)
		findings, err := p.crdFindings(ctx, r)
		if err != nil {
			return nil, err
		}
		plan.CRDs = append(plan.CRDs, findings...)
	}
	// Last, what the reconcile of the changed Operator does to dependency Operators created earlier.
	plan.Objects = append(plan.Objects, dependencyOwnerChanges(res, pr.after.Name)...)
	return finish(plan), nil
}

// dependencyOwnerChanges are the writes to dependency Operators created earlier (see
// dependencyOwners) by the reconcile of the Operator named op.
func dependencyOwnerChanges(res *resolution, op string) []PlannedObject {
	var out []PlannedObject
	gv := operatorsv1alpha1.GroupVersion.String()
	for _, d := range res.joined {
		out = append(out, PlannedObject{Action: "update", APIVersion: gv, Kind: "Operator", Name: d.Name, Operator: d.Name, By: byOperatorController,
			Note: fmt.Sprintf("a dependency another Operator created: Operator %s becomes one more owner", op)})
	}
	for _, d := range res.released {
		out = append(out, PlannedObject{Action: "update", APIVersion: gv, Kind: "Operator", Name: d.Name, Operator: d.Name, By: byOperatorController,
			Note: fmt.Sprintf("a dependency Operator %s no longer needs: its ownerReference is removed; other Operators still need it", op)})
	}
	for _, d := range res.deleted {
		out = append(out, PlannedObject{Action: "delete", APIVersion: gv, Kind: "Operator", Name: d.Name, Operator: d.Name, By: byOperatorController,
			Note: "a dependency nothing needs any more: its BundleDeployment and everything it installed go with it"})
	}
	return out
}

// operatorChange is the write the command itself makes: the Operator created, or its spec changed.
func operatorChange(pr proposal) (PlannedObject, error) {
	po := PlannedObject{APIVersion: operatorsv1alpha1.GroupVersion.String(), Kind: "Operator", Name: pr.after.Name, Operator: pr.after.Name, By: byCLI}
	after, err := toUnstructured(pr.after)
	if err != nil {
		return po, err
	}
	after.SetAPIVersion(po.APIVersion)
	after.SetKind(po.Kind)
	if pr.before == nil {
		po.Action, po.Object = "create", after
		return po, nil
	}
	before, err := toUnstructured(pr.before)
	if err != nil {
		return po, err
	}
	before.SetAPIVersion(po.APIVersion)
	before.SetKind(po.Kind)
	if po.Diff, err = objectDiff(before, after, "Operator "+pr.after.Name); err != nil {
		return po, err
	}
	po.Action = "unchanged"
	if po.Diff != "" {
		po.Action, po.Object = "update", after
	}
	return po, nil
}

// finish removes from the objects what the API server maintains, as diffs do.
func finish(plan *Plan) *Plan {
	for i := range plan.Objects {
		if u := plan.Objects[i].Object; u != nil {
			c := withoutServerFields(u)
			c.SetAPIVersion(plan.Objects[i].APIVersion)
			c.SetKind(plan.Objects[i].Kind)
			plan.Objects[i].Object = c
		}
	}
	return plan
}

// printPlan prints the plan as the output flag says.
func (o *options) printPlan(plan *Plan) error {
	if o.output != "table" {
		return o.print(plan, nil)
	}
	return writePlan(o.Out, plan)
}
