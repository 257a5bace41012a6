// Package preview computes what `kubectl olmv1 install PACKAGE --dry-run` and
// `upgrade NAME --preview` print: what operator-controller and rukpak would do, computed with their
// own code, changing nothing:
//
//  1. read what a reconcile reads (state.go): every Operator, the Catalogs, the
//     BundleDeployments operator-controller created, and the serving catalogs' content through
//     operator-controller's catalog cache (checked against status.contentHash);
//  2. change the Operators as the command would: a new Operator, or the upgraded spec, which the API
//     server validates and defaults in a dry run;
//  3. resolve every Operator together as a reconcile does (requests by deppy/pkg/cluster, solved by
//     deppy/pkg/operators); with dependencyPolicy Install, add the Operators a reconcile would create
//     for dependencies (internal/controller's DependencyOperator) and resolve again, until nothing
//     more is needed;
//  4. for every Operator whose bundle changes (objects.go): the namespace and BundleDeployment a
//     reconcile would write (internal/controller), and the bundle's objects as rukpak renders them
//     (rukpak/pkg/bundlerender), each compared with the live object by a server-side apply dry run;
//  5. the RBAC among those objects, and rukpak's CRD upgrade-safety check (rukpak/pkg/preflight)
//     on their CRDs (rbac.go).
//
// Every request goes through a readOnlyClient (readonly.go): a write that is not a dry run is refused.
// Write prints a Plan for people (write.go).
package preview

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
