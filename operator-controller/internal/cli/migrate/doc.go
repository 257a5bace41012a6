// Package migrate is `kubectl olmv1 migrate`: it moves an operator that OLM v0 installed
// (Subscription, OperatorGroup, installed CSV, CatalogSource) to OLM v1 in place, without replacing
// its pods or touching its custom resources.
//
// The contract, in the order a run follows it:
//
//   - ReadV0 reads the installation: the Subscription, its CSV, the namespace's OperatorGroups,
//     Subscriptions and CSVs, the CatalogSource, copied CSVs, and every object carrying OLM v0's
//     marks of the CSV (an ownerReference to it, its olm.owner labels, the package's component
//     label) plus the CRDs it owns.
//   - Map (pure) turns it into a Catalog and an Operator (package, channel, version pinned to the
//     CSV's, upgradePolicy from installPlanApproval, watchNamespaces from the OperatorGroup,
//     deploymentConfig from Subscription.spec.config plus what OLM v0 adds to pod templates,
//     collisionPolicy IfNoController, deletionPolicy Orphan until the end), and lists the blockers.
//   - Render runs rukpak's own renderer (rukpak/pkg/bundlerender) on the installed CSV and its
//     CRDs, and Compare (pure) classifies each object (adopt, create, delete after Installed,
//     release) and lists the differences between the running pod templates and the render.
//   - Prepare puts these together into a Plan, printed before anything changes (--dry-run stops
//     there); Migration.Run runs Steps, each idempotent and decided from the cluster, so that a run
//     killed anywhere is finished by the next one. The Operator records the migration's origin and
//     phase in annotations (AnnotationMigratedFrom, AnnotationMigrationPhase).
//
// Nothing of OLM v0 changes until the Operator is Installed and Healthy and owns every adopted
// object; then OLM v0 is released in an order that makes neither OLM v0 nor the garbage collector
// delete what stays. docs/migration.md explains the order and what it relies on in OLM v0.
//
// Subpackage v0fixture writes what OLM v0 leaves in a cluster, for tests.
package migrate
