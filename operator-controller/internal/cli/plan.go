package cli

// Previews: `install PACKAGE --dry-run` and `upgrade NAME --preview` print what operator-controller
// and rukpak would do, computed with their own code, and change nothing:
//
//  1. read what a reconcile reads (planinputs.go): every Operator, the Catalogs, the
//     BundleDeployments operator-controller created, and the serving catalogs' content through
//     operator-controller's catalog cache (checked against status.contentHash);
//  2. change the Operators as the command would: a new Operator, or the upgraded spec, which the API
//     server validates and defaults in a dry run;
//  3. resolve every Operator together as a reconcile does (requests by deppy/pkg/cluster, solved by
//     deppy/pkg/operators); with dependencyPolicy Install, add the Operators a reconcile would create
//     for dependencies (internal/controller's DependencyOperator) and resolve again, until nothing
//     more is needed;
//  4. for every Operator whose bundle changes (planobjects.go): the namespace and BundleDeployment a
//     reconcile would write (internal/controller), and the bundle's objects as rukpak renders them
//     (rukpak/pkg/bundlerender), each compared with the live object by a server-side apply dry run;
//  5. the RBAC among those objects, and rukpak's CRD upgrade-safety check (rukpak/pkg/preflight)
//     on their CRDs (planrbac.go).
//
// Every request goes through a readOnlyClient: a write that is not a dry run is refused.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	resolve "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/catalogs"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	"github.com/olmv1/olmv1/rukpak/pkg/preflight"
)

// Plan is what a preview prints (-o yaml|json prints it as it is).
type Plan struct {
	// Action is "install" or "upgrade".
	Action string `json:"action"`
	// Operator is the Operator the command creates or changes.
	Operator string `json:"operator"`
	Package  string `json:"package"`
	// From is the installed version (upgrade), To the version resolution chooses.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Failed is why resolution would not choose a bundle for the Operator ("" when it would).
	Failed string `json:"failed,omitempty"`
	// Bundles are the bundles the Operator gets, its dependencies' bundles, and those of every other
	// Operator whose bundle the change moves.
	Bundles []PlannedBundle `json:"bundles"`
	// Objects are what would be created, changed or deleted, in the order they would be written.
	Objects []PlannedObject `json:"objects"`
	// RBAC is what the bundles' Roles and ClusterRoles grant, and to whom.
	RBAC []RBACGrant `json:"rbac"`
	// CRDs are rukpak's CRD upgrade-safety findings for the bundles' CRDs.
	CRDs []CRDFinding `json:"crdUpgradeSafety"`
	// Notes are what else a person should know (e.g. other Operators that would fail).
	Notes []string `json:"notes,omitempty"`
}

// PlannedBundle is one bundle of the resolution and why it was chosen.
type PlannedBundle struct {
	// Operator is the Operator that installs it.
	Operator string `json:"operator"`
	// OperatorCreated says who creates that Operator: "kubectl olmv1" (install), "operator-controller"
	// (a dependency, dependencyPolicy Install), or "" (it exists).
	OperatorCreated string `json:"operatorCreated,omitempty"`
	Package         string `json:"package"`
	Bundle          string `json:"bundle"`
	Version         string `json:"version"`
	Catalog         string `json:"catalog"`
	Image           string `json:"image"`
	// Installed is the version installed now ("" when none).
	Installed string `json:"installed,omitempty"`
	// Change is install, upgrade, downgrade, reinstall (another bundle of the same version) or
	// unchanged.
	Change string `json:"change"`
	// Why are the reasons, one per line: the requirement, the channel, the version, the catalog and,
	// for an upgrade, the upgrade edge.
	Why []string `json:"why"`
}

// PlannedObject is one object a preview would write.
type PlannedObject struct {
	// Action is create, update, unchanged, delete, or unknown (the live object could not be read).
	Action     string `json:"action"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Operator is the Operator it is written for.
	Operator string `json:"operator"`
	// By is who writes it: kubectl olmv1, operator-controller or rukpak.
	By string `json:"by"`
	// Diff is a unified diff of the live object and the object after the change (update).
	Diff string `json:"diff,omitempty"`
	Note string `json:"note,omitempty"`
	// Object is the object that would be written (create, update).
	Object *unstructured.Unstructured `json:"object,omitempty"`
}

// CRDFinding is rukpak's CRD upgrade-safety finding for one CRD of a bundle.
type CRDFinding struct {
	Operator string `json:"operator"`
	preflight.Finding
	// Skipped is true when the BundleDeployment opts out of the check (rukpak would apply anyway).
	Skipped bool `json:"skipped,omitempty"`
}

// Who writes what.
const (
	byCLI                = "kubectl olmv1"
	byOperatorController = "operator-controller"
	byRukpak             = "rukpak"
)

// planner computes Plans. Its client must be a readOnlyClient.
type planner struct {
	c client.Client
	// reader reads catalog content (a MetadataReader on c by default).
	reader catalogs.ContentReader
	// fetch makes a bundle image's content available in a directory; remove deletes it.
	fetch func(ctx context.Context, image string) (dir string, remove func(), err error)
	// certProvider is the webhook certificate provider rukpak renders with (bundlerender).
	certProvider string
	// now is the creation time of the Operators the change adds.
	now func() time.Time
}

// proposal is the change a command would make: the Operator after it (validated by a dry run), and
// before it (nil for an install).
type proposal struct {
	action string
	after  *operatorsv1alpha1.Operator
	before *operatorsv1alpha1.Operator
}

// resolution is the outcome of resolving the Operators after the change, including the Operators
// created for dependencies.
type resolution struct {
	ops      []operatorsv1alpha1.Operator
	outcomes map[string]resolve.Outcome
	// created are the dependency Operators a reconcile would create, by name.
	created map[string]bool
	// joined are dependency Operators created earlier for other Operators that the changed Operator
	// needs too (its ownerReference is added); released are those it no longer needs but others do
	// (its ownerReference is removed); deleted are those nothing needs any more.
	joined, released, deleted []*operatorsv1alpha1.Operator
	// notes say what a reconcile would fail to do.
	notes []string
}

// maxDependencyRounds bounds how many times dependency Operators are added and the Operators
// resolved again (each round adds the packages the last one needed; a chain deeper than this is
// reported).
const maxDependencyRounds = 10

// resolveChange resolves the Operators with the change applied, adding the dependency Operators a
// reconcile would create (dependencyPolicy Install), and removing those created earlier that the
// changed Operator no longer needs.
func (p *planner) resolveChange(ctx context.Context, st *clusterState, pr proposal) (*resolution, error) {
	ops := make([]operatorsv1alpha1.Operator, 0, len(st.ops)+1)
	replaced := false
	for _, op := range st.ops {
		if op.Name == pr.after.Name {
			op, replaced = *pr.after, true
		}
		ops = append(ops, op)
	}
	if !replaced {
		ops = append(ops, *pr.after)
	}
	res := &resolution{created: map[string]bool{}}
	// The controller creates dependency Operators after the Operator that needs them.
	created := p.now()
	if c := pr.after.CreationTimestamp.Time; c.After(created) {
		created = c
	}
	for round := 0; ; round++ {
		out := st.resolve(ctx, ops)
		res.ops, res.outcomes = ops, out
		added := false
		byName := map[string]*operatorsv1alpha1.Operator{}
		for i := range ops {
			byName[ops[i].Name] = &ops[i]
		}
		for i, n := 0, len(ops); i < n; i++ {
			op := &ops[i]
			b := out[op.Name].Bundle
			if op.Spec.DependencyPolicy != operatorsv1alpha1.DependencyPolicyInstall || b == nil {
				continue
			}
			for _, d := range b.Dependencies {
				if d.Operator != "" {
					continue
				}
				dep := controller.DependencyOperator(op, d.Package)
				if have := byName[dep.Name]; have != nil {
					// Created for another dependent in this plan, or another package's Operator
					// has the name: the reconcile cannot create it.
					if have.Spec.PackageName != d.Package && round == 0 {
						res.notes = append(res.notes, fmt.Sprintf("Operator %s: package %q is needed but the Operator %q that would install it exists for package %q: operator-controller would report it; create an Operator with packageName %q under another name",
							op.Name, d.Package, dep.Name, have.Spec.PackageName, d.Package))
					}
					continue
				}
				created = created.Add(time.Millisecond)
				dep.CreationTimestamp.Time = created
				ops = append(ops, *dep)
				byName[dep.Name] = &ops[len(ops)-1]
				res.created[dep.Name] = true
				added = true
			}
		}
		if !added {
			break
		}
		if round == maxDependencyRounds {
			return nil, fmt.Errorf("dependencies still need more Operators after %d rounds of resolution: %v", maxDependencyRounds, sortedKeys(res.created))
		}
	}
	res.joined, res.released, res.deleted = dependencyOwners(res, pr.after)
	if len(res.deleted) > 0 {
		gone := map[string]bool{}
		for _, r := range res.deleted {
			gone[r.Name] = true
		}
		keep := make([]operatorsv1alpha1.Operator, 0, len(res.ops))
		for _, op := range res.ops {
			if !gone[op.Name] {
				keep = append(keep, op)
			}
		}
		res.ops, res.outcomes = keep, st.resolve(ctx, keep)
	}
	return res, nil
}

// dependencyOwners is what a reconcile of op does to the dependency Operators (labelled, created by
// operator-controller) besides creating new ones, as its ensureDependencies does: with
// dependencyPolicy Install, it joins those its bundle needs that other Operators created (adds its
// ownerReference); it releases those it owns and no longer needs (removes its ownerReference) and
// deletes those of them that nobody else owns. Nothing happens when op does not resolve.
func dependencyOwners(res *resolution, op *operatorsv1alpha1.Operator) (joined, released, deleted []*operatorsv1alpha1.Operator) {
	b := res.outcomes[op.Name].Bundle
	if b == nil {
		return nil, nil, nil
	}
	install := op.Spec.DependencyPolicy == operatorsv1alpha1.DependencyPolicyInstall
	byName := map[string]*operatorsv1alpha1.Operator{}
	for i := range res.ops {
		byName[res.ops[i].Name] = &res.ops[i]
	}
	isDependency := func(o *operatorsv1alpha1.Operator) bool {
		return o.Labels[operatorsv1alpha1.LabelDependency] == "true" && o.DeletionTimestamp.IsZero()
	}
	ownedBy := func(o *operatorsv1alpha1.Operator) bool {
		return slices.ContainsFunc(o.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == op.UID })
	}
	needed := map[string]bool{}
	for _, d := range b.Dependencies {
		name := d.Operator
		if name == "" && install {
			name = controller.DependencyOperator(op, d.Package).Name
		}
		if name == "" || needed[name] {
			continue
		}
		needed[name] = true
		if dep := byName[name]; install && name != op.Name && dep != nil && !res.created[name] && isDependency(dep) && !ownedBy(dep) {
			joined = append(joined, dep)
		}
	}
	if op.UID == "" {
		return joined, nil, nil // a new Operator owns nothing yet
	}
	for i := range res.ops {
		dep := &res.ops[i]
		if needed[dep.Name] || !isDependency(dep) || !ownedBy(dep) {
			continue
		}
		if len(dep.OwnerReferences) == 1 {
			deleted = append(deleted, dep)
		} else {
			released = append(released, dep)
		}
	}
	return joined, released, deleted
}

// planBundles lists, for the changed Operator, its dependencies, and every other Operator whose
// bundle moves, the bundle chosen and why. baseline is the resolution before the change.
func planBundles(st *clusterState, pr proposal, res *resolution, baseline map[string]resolve.Outcome) (bundles []PlannedBundle, affected []string) {
	ops := map[string]*operatorsv1alpha1.Operator{}
	for i := range res.ops {
		ops[res.ops[i].Name] = &res.ops[i]
	}
	names := []string{pr.after.Name}
	seen := map[string]bool{pr.after.Name: true}
	add := func(n string) {
		if !seen[n] && ops[n] != nil {
			seen[n] = true
			names = append(names, n)
		}
	}
	// Dependencies, as the changed Operator's bundle names them, then Operators created for them.
	if b := res.outcomes[pr.after.Name].Bundle; b != nil {
		for _, d := range b.Dependencies {
			if d.Operator != "" {
				add(d.Operator)
			} else {
				add(d.Package)
			}
		}
	}
	for _, n := range sortedKeys(res.created) {
		add(n)
	}
	others := make([]string, 0, len(res.ops))
	for n, o := range res.outcomes {
		if !seen[n] && bundleName(o.Bundle) != bundleName(baseline[n].Bundle) {
			others = append(others, n)
		}
	}
	sort.Strings(others)
	names = append(names, others...)

	for _, n := range names {
		op, o := ops[n], res.outcomes[n]
		if o.Bundle == nil {
			continue
		}
		pb := PlannedBundle{
			Operator: n, Package: o.Bundle.Package, Bundle: o.Bundle.Name, Version: o.Bundle.Version,
			Catalog: o.Bundle.Catalog, Image: o.Bundle.Image,
		}
		switch {
		case n == pr.after.Name && pr.before == nil:
			pb.OperatorCreated = byCLI
		case res.created[n]:
			pb.OperatorCreated = byOperatorController
		}
		installed := installedOf(st, op)
		if installed != nil {
			pb.Installed = installed.Version
		}
		pb.Change = changeOf(installed, o.Bundle)
		if pb.Change != "unchanged" {
			affected = append(affected, n)
		}
		pb.Why = why(st, op, o.Bundle, installed, dependents(res, n))
		bundles = append(bundles, pb)
	}
	return bundles, affected
}

// bundleName is the name of b, "" for nil.
func bundleName(b *resolve.Bundle) string {
	if b == nil {
		return ""
	}
	return b.Name
}

// installedOf is the bundle op's BundleDeployment installs (as resolution counts it), nil if none.
func installedOf(st *clusterState, op *operatorsv1alpha1.Operator) *resolve.Installed {
	bd := st.bds[op.Name]
	if bd == nil {
		return nil
	}
	v := bd.Annotations[controller.AnnotationBundleVersion]
	if v == "" || bd.Annotations[controller.AnnotationPackage] != op.Spec.PackageName {
		return nil
	}
	return &resolve.Installed{BundleName: bd.Annotations[controller.AnnotationBundleName], Version: v}
}

// dependents lists the bundles of the resolution that depend on the Operator named n, with the
// requirement each one has.
func dependents(res *resolution, n string) []string {
	pkg := ""
	for i := range res.ops {
		if res.ops[i].Name == n {
			pkg = res.ops[i].Spec.PackageName
		}
	}
	var out []string
	for _, name := range sortedKeys(res.outcomes) {
		b := res.outcomes[name].Bundle
		if b == nil || name == n {
			continue
		}
		for _, d := range b.Dependencies {
			if d.Package == pkg {
				out = append(out, fmt.Sprintf("%s (Operator %s) requires %s", b.Name, name, d.Requirement))
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
