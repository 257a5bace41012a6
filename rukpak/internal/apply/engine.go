// Package apply installs the objects a provisioner rendered for a BundleDeployment and keeps them
// there. Every change of content is recorded as a Helm v3 release revision (Secrets driver, in
// rukpak's namespace), so `helm history -n <rukpak namespace> <bundledeployment>` shows it.
//
// Objects are applied with server-side apply (field manager "rukpak", forced), CRDs first and waited
// for until Established, so a bundle may carry both a CRD and objects of its kind. A failed upgrade
// is rolled back to the last deployed revision. Objects that a new revision no longer contains are
// deleted (pruned); CustomResourceDefinitions are never pruned, because deleting a CRD deletes every
// custom resource of it. Re-applying an unchanged revision reverts changes made by hand (drift).
//
// Ownership (ownership.go): every applied object carries the owner labels of its BundleDeployment.
// An existing object without them is only changed when the request's collision policy allows it,
// and nothing is ever deleted or orphaned that the BundleDeployment does not own at that moment.
//
// Crash safety: a revision is recorded as pending before its objects are applied and marked
// deployed after; a revision a crash left pending is resumed under the same number, so one install
// (or one upgrade) is one revision however often the controller was killed.
//
// Unreadable records (records.go): when a record of the release cannot be read, or contradicts its
// Secret's name or labels, Apply and Uninstall change nothing and return a *Error with reason
// ReleaseCorrupt that names the Secret and how to recover.
package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	chart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	helmtime "helm.sh/helm/v3/pkg/time"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// digestKey is the key of the manifest digest in a revision's Helm config.
const digestKey = "rukpakManifestDigest"

// FieldOwner is the server-side apply field manager of everything rukpak applies.
const FieldOwner = "rukpak"

// identityKey is the key of a revision's Request.Identity in its Helm config.
const identityKey = "rukpakIdentity"

// sameRevision reports whether revision r is the content with manifest digest digest and identity
// identity: the same rendered objects from the same origin. A revision recorded without an identity
// (before identities existed), or a request without one, is compared by its objects alone.
func sameRevision(r *release.Release, digest, identity string) bool {
	if configString(r, digestKey) != digest {
		return false
	}
	recorded := configString(r, identityKey)
	return identity == "" || recorded == "" || recorded == identity
}

// Engine applies rendered objects as Helm release revisions.
type Engine struct {
	// Client writes the objects (server-side apply) and knows the cluster's kinds (its RESTMapper).
	Client client.Client
	// Scheme names the kinds of typed objects a renderer returns.
	Scheme *runtime.Scheme
	// Storage keeps the release revisions.
	Storage *storage.Storage
	// CRDEstablishTimeout bounds the wait for applied CRDs to be Established (default 30s).
	CRDEstablishTimeout time.Duration

	own ownWrites
}

// Request is one desired state of a release.
type Request struct {
	// Name is the release name: the BundleDeployment's name.
	Name string
	// Namespace is where namespaced objects without a namespace go (spec.installNamespace).
	Namespace string
	// Objects are what the provisioner rendered.
	Objects []client.Object
	// Info is stored with a new revision (its Helm "config"), e.g. the content hash and resolved
	// source; it does not take part in deciding whether the content changed.
	Info map[string]interface{}
	// Preflight, when set, runs before a new revision is applied (not for an unchanged one) and
	// blocks it by returning an error.
	Preflight func(ctx context.Context, objs []*unstructured.Unstructured) error
	// CollisionPolicy decides whether an existing object that the BundleDeployment does not own may
	// be taken (empty: Prevent).
	CollisionPolicy rukpakv1alpha1.CollisionPolicy
	// Identity says where the content came from (e.g. the content hash and the image digest): a
	// request whose rendered objects equal the deployed revision's but whose Identity differs is a
	// new revision (a new bundle version that renders the same objects is still an upgrade, and
	// the history says so). Empty: only the rendered objects decide. Revisions recorded before
	// identities existed match any Identity.
	Identity string
	// Attempt identifies what asked for this content (a hash of the BundleDeployment's spec): it is
	// recorded with a new revision, and when a rollback (Rollback) abandoned content, that content is
	// not applied again while the request carries the same Attempt.
	Attempt string
	// Phases, when set, applies a new revision phase by phase and stops at a phase whose objects do
	// not pass their progression probes (phases.go); the revision then stays pending (Result.Waiting).
	Phases *PhaseGate
}

// Result is the outcome of a successful Apply.
type Result struct {
	// Revision is the deployed revision.
	Revision int
	// Changed is true when a new revision was applied, false when the deployed one was re-applied.
	Changed bool
	// Objects are the applied objects, in apply order.
	Objects []*unstructured.Unstructured
	// LeftAlone names the objects an earlier revision applied that this one no longer contains but
	// that were not deleted, because another owner held them then (recorded with the revision).
	LeftAlone []string
	// HeldBack, when set, says that the request's content was not applied because a rollback
	// abandoned it for the same Attempt: the deployed revision (that rollback) was re-applied, and
	// HeldBack is its description.
	HeldBack string
	// Waiting, when set, says that the revision is applied up to a phase that waits on a progression
	// probe: it stays pending (nothing is pruned) and the next Apply resumes it; Objects are what was applied.
	Waiting *PhaseWaitError
	// History is every stored revision once applied, newest first, as History would read it back
	// (nil while Waiting): the records this Apply read and wrote, without listing them again.
	History []Revision
}

// Reasons of an *Error, matching the BundleDeployment's Installed condition reasons.
const (
	ReasonInstallFailed   = "InstallFailed"
	ReasonUpgradeFailed   = "UpgradeFailed"
	ReasonPreflightFailed = "UpgradeBlocked"
	ReasonObjectConflict  = rukpakv1alpha1.ReasonObjectConflict
)

// Error is a failed Apply, with the condition reason that describes it.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Apply makes the release Name match req. Every object is first checked against the collision
// policy: when an existing object may not be taken, nothing is changed and a *Error with reason
// ObjectConflict wraps a *ConflictError. When the rendered manifest equals the deployed revision's,
// it re-applies it (reverting drift) without a new revision; otherwise it records and applies a new
// revision, prunes what the new revision dropped, and rolls back to the previous revision when
// applying fails. A revision left pending by a crash is resumed: its number is reused, and what it
// may have applied is pruned like what the deployed revision applied.
func (e *Engine) Apply(ctx context.Context, req Request) (*Result, error) {
	objs, err := Prepare(e.Scheme, req.Name, req.Namespace, req.Objects, e.mapperScope)
	if err != nil {
		return nil, &Error{Reason: ReasonInstallFailed, Err: err}
	}
	digest, err := manifestDigest(objs)
	if err != nil {
		return nil, &Error{Reason: ReasonInstallFailed, Err: err}
	}

	revs, err := e.settle(req.Name)
	if err != nil {
		return nil, err
	}
	deployed := revs.deployed
	// What the deployed revision and those a crash left pending applied, read before anything is
	// written: prune and rollback work from it, and a record whose manifest cannot be read stops
	// the Apply here, whether the content changed or not.
	interrupted, err := e.recordedObjects(revs.interrupted...)
	if err != nil {
		return nil, err
	}
	var deployedObjs [][]*unstructured.Unstructured
	if deployed != nil {
		if deployedObjs, err = e.recordedObjects(deployed); err != nil {
			return nil, err
		}
	}
	info := map[string]interface{}{digestKey: digest}
	if req.Identity != "" {
		info[identityKey] = req.Identity
	}
	if req.Attempt != "" {
		info[attemptKey] = req.Attempt
	}
	for k, v := range req.Info {
		info[k] = v
	}
	// Content a rollback abandoned is not tried again while the request is the same attempt: the
	// deployed (rolled back) revision is re-applied instead.
	var heldBack string
	if deployed != nil && abandons(deployed, digest, req.Identity, req.Attempt) {
		objs, digest = deployedObjs[0], configString(deployed, digestKey)
		info[identityKey] = configString(deployed, identityKey)
		heldBack = configString(deployed, descriptionKey)
	}
	res, err := e.install(ctx, req, revs, deployedObjs, interrupted, objs, digest, info, "")
	if res != nil {
		res.HeldBack = heldBack
	}
	return res, err
}

// install applies objs (prepared, with manifest digest digest) as the release's desired state: it
// re-applies the deployed revision when digest is its digest, and otherwise records and applies a
// new revision with info as its Helm config (description, when set, as its Helm description).
// deployedObjs and interrupted are what the deployed revision and those a crash left pending
// applied.
func (e *Engine) install(ctx context.Context, req Request, revs *revisions, deployedObjs, interrupted [][]*unstructured.Unstructured,
	objs []*unstructured.Unstructured, digest string, info map[string]interface{}, description string) (*Result, error) {
	existing, err := e.claimObjects(ctx, req, objs)
	if err != nil {
		return nil, err
	}
	identity, _ := info[identityKey].(string)
	if revs.deployed != nil && sameRevision(revs.deployed, digest, identity) {
		return e.reapplyDeployed(ctx, req, revs, interrupted, objs, existing)
	}
	if req.Preflight != nil {
		if err := req.Preflight(ctx, objs); err != nil {
			return nil, &Error{Reason: ReasonPreflightFailed, Err: err}
		}
	}
	rel, err := e.recordPending(req, revs, objs, digest, info)
	if err != nil {
		return nil, err
	}
	// What earlier revisions may have applied: the deployed one, and any a crash interrupted.
	before := slices.Concat(deployedObjs, interrupted)
	leftAlone, applyErr := e.applyAndPrune(ctx, req, objs, existing, before)
	if wait := (*PhaseWaitError)(nil); errors.As(applyErr, &wait) {
		return &Result{Revision: rel.Version, Objects: wait.Applied, Waiting: wait}, nil // not Changed: deployed only once every phase passed
	}
	if applyErr != nil {
		return nil, e.failRevision(ctx, req, rel, revs.deployed, deployedObjs, objs, applyErr)
	}
	if err := e.markDeployed(rel, revs, leftAlone, description); err != nil {
		return nil, err
	}
	return &Result{Revision: rel.Version, Changed: true, Objects: objs, LeftAlone: leftAlone, History: newestFirst(revs.with(rel))}, nil
}

// claimObjects reads the existing objects of objs and checks them against req's collision policy;
// an object that may not be taken is a *Error with reason ObjectConflict.
func (e *Engine) claimObjects(ctx context.Context, req Request, objs []*unstructured.Unstructured) (map[ObjectKey]*unstructured.Unstructured, error) {
	existing, err := e.claim(ctx, req.Name, req.CollisionPolicy, objs)
	if err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) {
			return nil, &Error{Reason: ReasonObjectConflict, Err: err}
		}
		return nil, err
	}
	return existing, nil
}

// reapplyDeployed re-applies the deployed revision's content (objs), reverting drift, without a
// new revision, and closes the revisions a crash interrupted (interrupted is what they applied).
func (e *Engine) reapplyDeployed(ctx context.Context, req Request, revs *revisions, interrupted [][]*unstructured.Unstructured,
	objs []*unstructured.Unstructured, existing map[ObjectKey]*unstructured.Unstructured) (*Result, error) {
	deployed := revs.deployed
	if err := e.applyAll(ctx, req, objs, existing); err != nil {
		return nil, applyError(ReasonInstallFailed, fmt.Errorf("re-applying revision %d: %w", deployed.Version, err))
	}
	// A newer revision interrupted by a crash and then abandoned (the spec went back): remove
	// what it may have added and close it.
	leftAlone, err := e.closeInterrupted(ctx, req.Name, revs.interrupted, interrupted, objs, deployed.Version)
	if err != nil {
		return nil, err
	}
	return &Result{Revision: deployed.Version, Objects: objs, LeftAlone: append(recordedLeftAlone(deployed), leftAlone...), History: newestFirst(revs.all)}, nil
}

// recordPending records objs as a new revision, pending install or pending upgrade, before any of
// it is applied (crash safety), and returns it.
func (e *Engine) recordPending(req Request, revs *revisions, objs []*unstructured.Unstructured, digest string, info map[string]interface{}) (*release.Release, error) {
	manifest, err := encodeManifest(objs)
	if err != nil {
		return nil, &Error{Reason: ReasonInstallFailed, Err: err}
	}
	rel := pendingRelease(req, revs.deployed, manifest, info)
	last := revs.last
	identity, _ := info[identityKey].(string)
	rel.Version = nextVersion(last, digest, identity)
	if last != nil && rel.Version == last.Version {
		err = e.Storage.Update(rel)
	} else {
		err = e.create(rel, revs)
	}
	if err != nil {
		return nil, corrupt(fmt.Errorf("recording revision %d of release %q: %w", rel.Version, req.Name, err))
	}
	return rel, nil
}

// pendingRelease is the Helm release record of a new revision of req's release with manifest and
// info (its Helm config): a pending install, or a pending upgrade of deployed when it is set.
func pendingRelease(req Request, deployed *release.Release, manifest string, info map[string]interface{}) *release.Release {
	now := helmtime.Now()
	rel := &release.Release{
		Name:      req.Name,
		Namespace: req.Namespace,
		Manifest:  manifest,
		Config:    info,
		Chart: &chart.Chart{Metadata: &chart.Metadata{
			APIVersion: chart.APIVersionV2, Name: req.Name, Version: "0.0.0",
			Description: "objects rendered by rukpak for BundleDeployment " + req.Name,
		}},
		Info: &release.Info{FirstDeployed: now, LastDeployed: now, Status: release.StatusPendingInstall, Description: "Install in progress"},
	}
	if deployed != nil {
		rel.Info.FirstDeployed = deployed.Info.FirstDeployed
		rel.Info.Status, rel.Info.Description = release.StatusPendingUpgrade, "Upgrade in progress"
	}
	return rel
}

// nextVersion is the number of a new revision with manifest digest digest and identity identity
// after revision last (nil before the first): last's own number when it is to be resumed or
// retried.
func nextVersion(last *release.Release, digest, identity string) int {
	switch {
	case last == nil:
		return 1
	case isPending(last):
		return last.Version // resuming a revision a crash interrupted: one install is one revision
	case last.Info != nil && last.Info.Status == release.StatusFailed && sameRevision(last, digest, identity):
		return last.Version // retrying the same failed content: reuse its revision
	default:
		return last.Version + 1
	}
}

// applyAndPrune applies objs and then prunes what the earlier revisions applied (before) that objs
// no longer contain; it returns what the prune left alone.
func (e *Engine) applyAndPrune(ctx context.Context, req Request, objs []*unstructured.Unstructured,
	existing map[ObjectKey]*unstructured.Unstructured, before [][]*unstructured.Unstructured) ([]string, error) {
	if err := e.applyPhases(ctx, req, objs, existing, req.Phases); err != nil {
		return nil, err
	}
	return e.prune(ctx, req.Name, before, objs)
}

// failRevision marks revision rel failed by applyErr and, for an upgrade, rolls back to the
// deployed revision (what it applied is deployedObjs[0]); it returns the *Error to report.
func (e *Engine) failRevision(ctx context.Context, req Request, rel, deployed *release.Release,
	deployedObjs [][]*unstructured.Unstructured, objs []*unstructured.Unstructured, applyErr error) error {
	rel.SetStatus(release.StatusFailed, applyErr.Error())
	_ = e.Storage.Update(rel)
	if deployed == nil {
		return applyError(ReasonInstallFailed, fmt.Errorf("installing revision %d: %w", rel.Version, applyErr))
	}
	rbErr := e.rollback(ctx, req, deployedObjs[0], objs)
	msg := fmt.Errorf("upgrade to revision %d failed, rolled back to revision %d: %w", rel.Version, deployed.Version, applyErr)
	if rbErr != nil {
		msg = fmt.Errorf("upgrade to revision %d failed (%v), and rolling back to revision %d failed too: %w", rel.Version, applyErr, deployed.Version, rbErr)
	}
	return applyError(ReasonUpgradeFailed, msg)
}

// markDeployed records revision rel as deployed (with what its prune left alone), the previously
// deployed revision as superseded, and the other revisions a crash interrupted as failed.
func (e *Engine) markDeployed(rel *release.Release, revs *revisions, leftAlone []string, description string) error {
	deployed := revs.deployed
	// Mark the new revision deployed before the old one superseded: a crash in between leaves two
	// deployed revisions, which settle repairs, never none.
	if len(leftAlone) > 0 {
		rel.Config[leftAloneKey] = leftAlone
	}
	switch {
	case description != "":
		rel.SetStatus(release.StatusDeployed, description)
	case deployed != nil:
		rel.SetStatus(release.StatusDeployed, "Upgrade complete")
	default:
		rel.SetStatus(release.StatusDeployed, "Install complete")
	}
	if err := e.Storage.Update(rel); err != nil {
		return fmt.Errorf("marking revision %d deployed: %w", rel.Version, err)
	}
	if deployed != nil {
		deployed.SetStatus(release.StatusSuperseded, "Superseded by revision "+fmt.Sprint(rel.Version))
		if err := e.Storage.Update(deployed); err != nil {
			return fmt.Errorf("marking revision %d superseded: %w", deployed.Version, err)
		}
	}
	for _, r := range revs.interrupted {
		if r.Version != rel.Version {
			if err := e.markInterrupted(r, rel.Version); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyError wraps err with reason, unless err is a collision found while applying.
func applyError(reason string, err error) *Error {
	var ce *ConflictError
	if errors.As(err, &ce) {
		return &Error{Reason: ReasonObjectConflict, Err: err}
	}
	return &Error{Reason: reason, Err: err}
}
