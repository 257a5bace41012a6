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
	"sort"
	"strings"
	"time"

	chart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// digestKey is the key of the manifest digest in a revision's Helm config.
const digestKey = "rukpakManifestDigest"

// FieldOwner is the server-side apply field manager of everything rukpak applies.
const FieldOwner = "rukpak"

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
	// Attempt identifies what asked for this content (a hash of the BundleDeployment's spec): it is
	// recorded with a new revision, and when a rollback (Rollback) abandoned content, that content is
	// not applied again while the request carries the same Attempt.
	Attempt string
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

// revisions is the stored history of a release, sorted out.
type revisions struct {
	// deployed is the newest deployed revision, nil before the first install completed.
	deployed *release.Release
	// last is the newest revision of any status.
	last *release.Release
	// interrupted are revisions left pending by a controller that stopped while applying them.
	interrupted []*release.Release
}

func isPending(r *release.Release) bool {
	return r.Info != nil && r.Info.Status.IsPending()
}

// settle reads the history of release name and repairs what a crash between two writes can leave:
// an older revision still marked deployed next to a newer deployed one is marked superseded.
func (e *Engine) settle(name string) (*revisions, error) {
	hist, err := e.history(name)
	if err != nil {
		return nil, err
	}
	revs := &revisions{}
	for _, r := range hist {
		if r.Info != nil && r.Info.Status == release.StatusDeployed {
			if revs.deployed != nil {
				revs.deployed.SetStatus(release.StatusSuperseded, "Superseded by revision "+fmt.Sprint(r.Version))
				if err := e.Storage.Update(revs.deployed); err != nil {
					return nil, fmt.Errorf("marking revision %d superseded: %w", revs.deployed.Version, err)
				}
			}
			revs.deployed = r
		}
		if isPending(r) {
			revs.interrupted = append(revs.interrupted, r)
		}
		revs.last = r
	}
	return revs, nil
}

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
	if req.Attempt != "" {
		info[attemptKey] = req.Attempt
	}
	for k, v := range req.Info {
		info[k] = v
	}
	// Content a rollback abandoned is not tried again while the request is the same attempt: the
	// deployed (rolled back) revision is re-applied instead.
	var heldBack string
	if deployed != nil && abandons(deployed, digest, req.Attempt) {
		objs, digest = deployedObjs[0], configString(deployed, digestKey)
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
	deployed, last := revs.deployed, revs.last
	existing, err := e.claim(ctx, req.Name, req.CollisionPolicy, objs)
	if err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) {
			return nil, &Error{Reason: ReasonObjectConflict, Err: err}
		}
		return nil, err
	}
	if deployed != nil && deployed.Config[digestKey] == digest {
		if err := e.applyAll(ctx, req, objs, existing); err != nil {
			return nil, applyError(ReasonInstallFailed, fmt.Errorf("re-applying revision %d: %w", deployed.Version, err))
		}
		// A newer revision interrupted by a crash and then abandoned (the spec went back): remove
		// what it may have added and close it.
		leftAlone, err := e.closeInterrupted(ctx, req.Name, revs.interrupted, interrupted, objs, deployed.Version)
		if err != nil {
			return nil, err
		}
		return &Result{Revision: deployed.Version, Objects: objs, LeftAlone: append(recordedLeftAlone(deployed), leftAlone...)}, nil
	}
	if req.Preflight != nil {
		if err := req.Preflight(ctx, objs); err != nil {
			return nil, &Error{Reason: ReasonPreflightFailed, Err: err}
		}
	}

	manifest, err := encodeManifest(objs)
	if err != nil {
		return nil, &Error{Reason: ReasonInstallFailed, Err: err}
	}
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
	switch {
	case last == nil:
		rel.Version = 1
	case isPending(last):
		rel.Version = last.Version // resuming a revision a crash interrupted: one install is one revision
	case last.Info != nil && last.Info.Status == release.StatusFailed && last.Config[digestKey] == digest:
		rel.Version = last.Version // retrying the same failed content: reuse its revision
	default:
		rel.Version = last.Version + 1
	}
	if last != nil && rel.Version == last.Version {
		err = e.Storage.Update(rel)
	} else {
		err = e.create(rel)
	}
	if err != nil {
		return nil, corrupt(fmt.Errorf("recording revision %d of release %q: %w", rel.Version, req.Name, err))
	}

	// What earlier revisions may have applied: the deployed one, and any a crash interrupted.
	before := slices.Concat(deployedObjs, interrupted)
	var leftAlone []string
	applyErr := e.applyAll(ctx, req, objs, existing)
	if applyErr == nil {
		leftAlone, applyErr = e.prune(ctx, req.Name, before, objs)
	}
	if applyErr != nil {
		rel.SetStatus(release.StatusFailed, applyErr.Error())
		_ = e.Storage.Update(rel)
		if deployed == nil {
			return nil, applyError(ReasonInstallFailed, fmt.Errorf("installing revision %d: %w", rel.Version, applyErr))
		}
		rbErr := e.rollback(ctx, req, deployedObjs[0], objs)
		msg := fmt.Errorf("upgrade to revision %d failed, rolled back to revision %d: %w", rel.Version, deployed.Version, applyErr)
		if rbErr != nil {
			msg = fmt.Errorf("upgrade to revision %d failed (%v), and rolling back to revision %d failed too: %w", rel.Version, applyErr, deployed.Version, rbErr)
		}
		return nil, applyError(ReasonUpgradeFailed, msg)
	}
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
		return nil, fmt.Errorf("marking revision %d deployed: %w", rel.Version, err)
	}
	if deployed != nil {
		deployed.SetStatus(release.StatusSuperseded, "Superseded by revision "+fmt.Sprint(rel.Version))
		if err := e.Storage.Update(deployed); err != nil {
			return nil, fmt.Errorf("marking revision %d superseded: %w", deployed.Version, err)
		}
	}
	for _, r := range revs.interrupted {
		if r.Version != rel.Version {
			if err := e.markInterrupted(r, rel.Version); err != nil {
				return nil, err
			}
		}
	}
	return &Result{Revision: rel.Version, Changed: true, Objects: objs, LeftAlone: leftAlone}, nil
}

// applyError wraps err with reason, unless err is a collision found while applying.
func applyError(reason string, err error) *Error {
	var ce *ConflictError
	if errors.As(err, &ce) {
		return &Error{Reason: ReasonObjectConflict, Err: err}
	}
	return &Error{Reason: reason, Err: err}
}

// leftAloneKey records, in a revision's Helm config, the objects its prune left alone.
const leftAloneKey = "rukpakLeftAlone"

// recordedLeftAlone is what the prune of revision r left alone.
func recordedLeftAlone(r *release.Release) []string {
	var out []string
	switch v := r.Config[leftAloneKey].(type) {
	case []string:
		out = append(out, v...)
	case []interface{}:
		for _, s := range v {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// closeInterrupted prunes what interrupted revisions applied (applied, decoded) beyond objs and
// marks them failed.
func (e *Engine) closeInterrupted(ctx context.Context, name string, interrupted []*release.Release, applied [][]*unstructured.Unstructured, objs []*unstructured.Unstructured, current int) ([]string, error) {
	if len(interrupted) == 0 {
		return nil, nil
	}
	leftAlone, err := e.prune(ctx, name, applied, objs)
	if err != nil {
		return nil, err
	}
	for _, r := range interrupted {
		if err := e.markInterrupted(r, current); err != nil {
			return nil, err
		}
	}
	return leftAlone, nil
}

func (e *Engine) markInterrupted(r *release.Release, current int) error {
	r.SetStatus(release.StatusFailed, fmt.Sprintf("Interrupted: rukpak stopped while applying it; revision %d is installed", current))
	if err := e.Storage.Update(r); err != nil {
		return fmt.Errorf("closing interrupted revision %d: %w", r.Version, err)
	}
	return nil
}

// Revision is one stored revision of a release.
type Revision struct {
	Version  int
	Status   string
	Deployed time.Time
	Info     map[string]interface{}
	// HealthyAt is when the revision was first seen Healthy (MarkHealthy); zero while it never was.
	HealthyAt time.Time
	// RollbackFrom is the revision a rollback (Rollback) replaced by this one; 0 for others.
	RollbackFrom int
	// Description is the rollback's reason for a rollback revision, empty for others.
	Description string
}

// History lists the stored revisions of release name, newest first.
func (e *Engine) History(name string) ([]Revision, error) {
	hist, err := e.history(name)
	if err != nil {
		return nil, err
	}
	out := make([]Revision, 0, len(hist))
	for i := len(hist) - 1; i >= 0; i-- {
		r := hist[i]
		out = append(out, revisionOf(r))
	}
	return out, nil
}

// Uninstall removes release name: with orphan unset it deletes every object any stored revision
// applied that the BundleDeployment still owns at that moment (CustomResourceDefinitions only when
// deleteCRDs is set); with orphan set it removes the ownership labels from them and leaves them in
// place. Then it deletes the revisions. It returns the objects left alone because another owner
// holds them now.
func (e *Engine) Uninstall(ctx context.Context, name string, deleteCRDs, orphan bool) ([]string, error) {
	hist, err := e.history(name)
	if err != nil || len(hist) == 0 {
		return nil, err
	}
	recorded, err := e.recordedObjects(hist...)
	if err != nil {
		return nil, err
	}
	all := map[ObjectKey]*unstructured.Unstructured{}
	for _, objs := range recorded {
		for _, u := range objs {
			all[KeyOf(u)] = u
		}
	}
	var errs []string
	var leftAlone []string
	for k, u := range all {
		var err error
		switch {
		case orphan:
			err = e.orphanOwned(ctx, name, u)
		case isCRD(u) && !deleteCRDs:
			err = e.releaseCRD(ctx, name, u)
		default:
			var skipped bool
			if skipped, err = e.deleteOwned(ctx, name, u); skipped {
				leftAlone = append(leftAlone, k.String())
			}
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	sort.Strings(leftAlone)
	if len(errs) > 0 {
		sort.Strings(errs)
		return leftAlone, errors.New(strings.Join(errs, "; "))
	}
	for _, r := range hist {
		if _, err := e.Storage.Delete(r.Name, r.Version); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
			return leftAlone, fmt.Errorf("deleting revision %d of release %q: %w", r.Version, name, err)
		}
	}
	return leftAlone, nil
}

// history is every stored revision of name, oldest first. An unreadable record makes it fail
// with a *Error of reason ReleaseCorrupt.
func (e *Engine) history(name string) ([]*release.Release, error) {
	hist, err := e.Storage.History(name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, corrupt(fmt.Errorf("reading the revisions of release %q: %w", name, err))
	}
	sortByVersion(hist)
	return hist, nil
}

// Scope reports whether objects of a kind the bundle does not define itself are namespaced.
type Scope func(gvk schema.GroupVersionKind) (namespaced bool, err error)

// mapperScope answers from the API server's kinds (the client's RESTMapper).
func (e *Engine) mapperScope(gvk schema.GroupVersionKind) (bool, error) {
	m, err := e.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, fmt.Errorf("a kind the API server does not serve (%v): install the CRD that defines %s first or remove the object", err, gvk.GroupVersion())
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// Prepare turns rendered objects into exactly what the engine applies: unstructured copies with
// cluster-assigned fields removed and the owner labels of BundleDeployment owner added, namespaced
// objects without a namespace put into namespace (kinds defined by a CRD of the same bundle take
// their scope from it, others from scope), in apply order.
func Prepare(scheme *runtime.Scheme, owner, namespace string, objects []client.Object, scope Scope) ([]*unstructured.Unstructured, error) {
	objs, err := toUnstructured(scheme, owner, objects)
	if err != nil {
		return nil, err
	}
	if err := defaultNamespaces(objs, namespace, scope); err != nil {
		return nil, err
	}
	applyOrder(objs)
	return objs, nil
}

// defaultNamespaces puts namespaced objects without a namespace into ns. Kinds defined by a CRD of
// the same bundle take their scope from it; others from scope.
func defaultNamespaces(objs []*unstructured.Unstructured, ns string, scope Scope) error {
	bundled := map[schema.GroupKind]bool{}
	for _, u := range objs {
		if isCRD(u) {
			group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
			s, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
			bundled[schema.GroupKind{Group: group, Kind: kind}] = s == string(apiextensionsv1.NamespaceScoped)
		}
	}
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		namespaced, ok := bundled[gvk.GroupKind()]
		if !ok {
			var err error
			if namespaced, err = scope(gvk); err != nil {
				return fmt.Errorf("the bundle contains %s, %w", KeyOf(u), err)
			}
		}
		switch {
		case namespaced && u.GetNamespace() == "":
			u.SetNamespace(ns)
		case !namespaced && u.GetNamespace() != "":
			u.SetNamespace("")
		}
	}
	return nil
}

// applyAll server-side applies objs in order, waiting for CRDs to be Established before the first
// object that is not a CRD. existing holds the objects as claim read them; others are read first.
// Every object is checked against req's collision policy right before it is written (applyOne).
func (e *Engine) applyAll(ctx context.Context, req Request, objs []*unstructured.Unstructured, existing map[ObjectKey]*unstructured.Unstructured) error {
	var crds []string
	waited := false
	for _, u := range objs {
		if !isCRD(u) && !waited && len(crds) > 0 {
			if err := e.waitEstablished(ctx, crds); err != nil {
				return err
			}
			waited = true
		}
		live, ok := existing[KeyOf(u)]
		if !ok && existing == nil {
			var err error
			if live, err = e.observe(ctx, u); err != nil {
				return err
			}
		}
		if err := e.applyOne(ctx, req.Name, req.CollisionPolicy, u, live); err != nil {
			return err
		}
		if isCRD(u) {
			crds = append(crds, u.GetName())
		}
	}
	if !waited && len(crds) > 0 {
		return e.waitEstablished(ctx, crds)
	}
	return nil
}

func (e *Engine) waitEstablished(ctx context.Context, names []string) error {
	timeout := e.CRDEstablishTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	var pending string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := e.Client.Get(ctx, client.ObjectKey{Name: n}, crd); err != nil {
				pending = n + ": " + err.Error()
				return false, nil
			}
			if !CRDEstablished(crd) {
				pending = n
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("CustomResourceDefinition %s is not Established after %s (check its conditions with kubectl describe crd): %w", pending, timeout, err)
	}
	// New kinds are served now: let the RESTMapper learn them.
	return nil
}

// CRDEstablished reports whether crd has condition Established=True.
func CRDEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// prune deletes what the earlier revisions applied (decoded) and objs no longer contain (never
// CRDs), if release name still owns it; it returns what it left alone because another owner holds
// it now.
func (e *Engine) prune(ctx context.Context, name string, earlier [][]*unstructured.Unstructured, objs []*unstructured.Unstructured) ([]string, error) {
	keep := map[ObjectKey]bool{}
	for _, u := range objs {
		keep[KeyOf(u)] = true
	}
	var leftAlone []string
	for _, old := range earlier {
		for _, u := range old {
			k := KeyOf(u)
			if keep[k] || isCRD(u) {
				continue
			}
			keep[k] = true // once per object, whichever revisions had it
			skipped, err := e.deleteOwned(ctx, name, u)
			if err != nil {
				return nil, fmt.Errorf("pruning %s, which the new revision no longer contains: %w", k, err)
			}
			if skipped {
				leftAlone = append(leftAlone, k.String())
			}
		}
	}
	sort.Strings(leftAlone)
	return leftAlone, nil
}

// rollback re-applies the deployed revision's objects (old) and deletes what the failed one added.
func (e *Engine) rollback(ctx context.Context, req Request, old, failed []*unstructured.Unstructured) error {
	keep := map[ObjectKey]bool{}
	for _, u := range old {
		keep[KeyOf(u)] = true
	}
	var errs []string
	for _, u := range failed {
		if !keep[KeyOf(u)] && !isCRD(u) {
			if _, err := e.deleteOwned(ctx, req.Name, u); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if err := e.applyAll(ctx, req, old, nil); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func isCRD(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == apiextensionsv1.GroupName && gvk.Kind == "CustomResourceDefinition"
}
