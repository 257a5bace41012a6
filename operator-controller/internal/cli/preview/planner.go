package preview

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/catalogs"
)

// Planner computes Plans. Its client is a readOnlyClient.
type Planner struct {
	c client.Client
	// reader reads catalog content (a MetadataReader on c by default).
	reader catalogs.ContentReader
	// fetch makes a bundle image's content available in a directory; remove deletes it.
	fetch Fetch
	// certProvider is the webhook certificate provider rukpak renders with (bundlerender).
	certProvider string
	// now is the creation time of the Operators the change adds.
	now func() time.Time
	// clusterVersion, when set, reads the cluster's version resolution checks bundles against.
	clusterVersion func(context.Context) (*olm.Cluster, error)
}

// WithClusterVersion has the Planner resolve as operator-controller does on this cluster: bundles
// the version read cannot run are skipped (and the plan says which).
func (p *Planner) WithClusterVersion(read func(context.Context) (*olm.Cluster, error)) *Planner {
	p.clusterVersion = read
	return p
}

// Fetch makes a bundle image's content available in a directory; remove deletes it.
type Fetch func(ctx context.Context, image string) (dir string, remove func(), err error)

// New returns a Planner that reads through c, made read-only, and gets bundle images with fetch;
// certProvider is the webhook certificate provider rukpak runs with (a bundlerender provider).
func New(c client.Client, fetch Fetch, certProvider string) *Planner {
	ro := readOnlyClient{Client: c}
	return &Planner{c: ro, reader: &catalogs.MetadataReader{Client: ro}, fetch: fetch, certProvider: certProvider, now: time.Now}
}

// Client is the read-only client the Planner reads through: reads pass, writes must be dry runs.
func (p *Planner) Client() client.Client { return p.c }

// ReadState reads what a reconcile reads (see State).
func (p *Planner) ReadState(ctx context.Context) (*State, error) {
	st, err := readState(ctx, p.c, p.reader)
	if err != nil || p.clusterVersion == nil {
		return st, err
	}
	if st.cluster, err = p.clusterVersion(ctx); err != nil {
		return nil, fmt.Errorf("reading the cluster's version, which operator-controller checks bundles against: %w", err)
	}
	return st, nil
}

// Install is the Plan of creating op: the API server validates and defaults it in a dry run, then
// it is resolved with every other Operator.
func (p *Planner) Install(ctx context.Context, op *operatorsv1alpha1.Operator) (*Plan, error) {
	dry, err := p.dryRunCreate(ctx, op, fmt.Sprintf("preview a change with `kubectl olmv1 upgrade %s --preview`", op.Name))
	if err != nil {
		return nil, err
	}
	st, err := p.ReadState(ctx)
	if err != nil {
		return nil, err
	}
	return p.build(ctx, st, proposal{action: "install", after: dry})
}

// dryRunCreate is op as the API server would create it (validated and defaulted by a dry run), as
// the newest Operator, without the UID it is assigned when it is created. ifExists says what to do
// when an Operator of that name exists.
func (p *Planner) dryRunCreate(ctx context.Context, op *operatorsv1alpha1.Operator, ifExists string) (*operatorsv1alpha1.Operator, error) {
	dry := op.DeepCopy()
	if err := p.c.Create(ctx, dry, client.DryRunAll); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("operator %s already exists: %s", op.Name, ifExists)
		}
		return nil, fmt.Errorf("create Operator %s (dry run): %w", op.Name, err)
	}
	dry.UID, dry.CreationTimestamp = "", metav1.NewTime(p.now())
	return dry, nil
}

// Upgrade is the Plan of changing Operator before into after (as the API server would store it, by
// a dry run) in the cluster st was read from.
func (p *Planner) Upgrade(ctx context.Context, st *State, before, after *operatorsv1alpha1.Operator) (*Plan, error) {
	return p.build(ctx, st, proposal{action: "upgrade", after: after, before: before})
}

// proposal is the change a command would make: the Operator after it (validated by a dry run), and
// before it (nil for an install).
type proposal struct {
	action string
	after  *operatorsv1alpha1.Operator
	before *operatorsv1alpha1.Operator
}

// build computes the Plan of a change.
func (p *Planner) build(ctx context.Context, st *State, pr proposal) (*Plan, error) {
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
	for _, s := range o.Skipped {
		plan.Notes = append(plan.Notes, "resolution on this cluster: "+s)
	}
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
		if err := p.addGrantsAndFindings(ctx, plan, r); err != nil {
			return nil, err
		}
	}
	// Last, what the reconcile of the changed Operator does to dependency Operators created earlier.
	plan.Objects = append(plan.Objects, dependencyOwnerChanges(res, pr.after.Name)...)
	return finish(plan), nil
}

// addGrantsAndFindings adds to plan the RBAC the objects r holds grant, and rukpak's CRD
// upgrade-safety findings for its CRDs.
func (p *Planner) addGrantsAndFindings(ctx context.Context, plan *Plan, r *rendered) error {
	grants, err := rbacGrants(ctx, p.c, r)
	if err != nil {
		return err
	}
	plan.RBAC = append(plan.RBAC, grants...)
	findings, err := p.crdFindings(ctx, r)
	if err != nil {
		return err
	}
	plan.CRDs = append(plan.CRDs, findings...)
	return nil
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
