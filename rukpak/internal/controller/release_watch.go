package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

// Release records are watched so that a BundleDeployment blocked by an unreadable one
// (Installed=False/ReleaseCorrupt, or a deletion waiting on its finalizer) continues as soon as the
// user sets the record aside (owner=rukpak-set-aside), deletes it or repairs it, instead of at its
// next back-off retry, which can be minutes away.
//
// The watch is metadata only (PartialObjectMetadata: no release data is held in memory,
// managedFields dropped) and scoped to rukpak's namespace and to Secrets of Helm's release type
// (field selector type=helm.sh/release.v1), so it holds the release records and nothing else. The
// type, not the owner=helm label, selects them: a record whose owner label was removed or changed
// is still seen, so deleting such a record (one that hides from the history and so blocks its
// BundleDeployment) is noticed too. It has its own cache: the manager's cache is scoped by rukpak's
// owner labels, which release records do not carry, and a Secret informer configured there would
// also serve the drift watches of Secrets that bundles apply.
//
// Rukpak's own writes to its records (a new revision, superseding the previous one, pruning old
// history) reconcile nothing: only changes and deletions of records of a BundleDeployment that is
// blocked by its records at that moment do.

// releaseRecordType is the Secret type of Helm release records (the head Secret of a chunked one).
const releaseRecordType = "helm.sh/release.v1"

// releaseRecordKeyPrefix starts the name of every release record: sh.helm.release.v1.<release>.v<N>.
const releaseRecordKeyPrefix = "sh.helm.release.v1."

// releaseCache runs with the manager's caches: it is started, and synced, before the controllers.
type releaseCache struct{ cache.Cache }

// GetCache makes the manager start releaseCache in its group of caches.
func (c releaseCache) GetCache() cache.Cache { return c.Cache }

// watchReleaseRecords reconciles BundleDeployments blocked by their release records when one of
// their records changes or goes.
func (r *BundleDeploymentReconciler) watchReleaseRecords(mgr ctrl.Manager, c controller.Controller) error {
	if r.Namespace == "" {
		return nil
	}
	records, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient:           mgr.GetHTTPClient(),
		Scheme:               mgr.GetScheme(),
		Mapper:               mgr.GetRESTMapper(),
		DefaultNamespaces:    map[string]cache.Config{r.Namespace: {}},
		DefaultFieldSelector: fields.OneTermEqualSelector("type", releaseRecordType),
		DefaultTransform:     cache.TransformStripManagedFields(),
	})
	if err != nil {
		return fmt.Errorf("creating the cache of release records in namespace %q: %w", r.Namespace, err)
	}
	if err := mgr.Add(releaseCache{records}); err != nil {
		return err
	}
	secret := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}}
	src := source.Kind[client.Object](records, secret, handler.EnqueueRequestsFromMapFunc(r.blockedOwnerOf), recordChanged{})
	if err := c.Watch(src); err != nil {
		return fmt.Errorf("watching the release records in namespace %q: %w", r.Namespace, err)
	}
	return nil
}

// recordChanged passes changes and deletions of records. Creations are rukpak's own new revisions,
// or the initial list (every BundleDeployment is reconciled at start anyway): neither can unblock
// a BundleDeployment.
type recordChanged struct{ predicate.Funcs }

func (recordChanged) Create(event.CreateEvent) bool   { return false }
func (recordChanged) Generic(event.GenericEvent) bool { return false }

// blockedOwnerOf maps a release record to its BundleDeployment when that one is blocked by its
// records: its Installed condition says ReleaseCorrupt, or it is being deleted and waits on its
// finalizer (an unreadable record stops the uninstall).
func (r *BundleDeploymentReconciler) blockedOwnerOf(ctx context.Context, o client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	for _, name := range releasesOf(o) {
		bd := &rukpakv1alpha1.BundleDeployment{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, bd); err != nil || !blockedByRecords(bd) {
			continue
		}
		r.triggers.note(name, false) // a full reconcile: apply, not only a health check
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
	return reqs
}

// blockedByRecords reports whether bd waits for its release records to be dealt with.
func blockedByRecords(bd *rukpakv1alpha1.BundleDeployment) bool {
	if !bd.DeletionTimestamp.IsZero() {
		return controllerutil.ContainsFinalizer(bd, Finalizer)
	}
	// Status read (7): a corrupt release record is what Installed last reported.
	c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled)
	return c != nil && c.Reason == apply.ReasonReleaseCorrupt
}

// releasesOf are the releases (BundleDeployments) a record may belong to: the one its "name"
// label says, and the one the Secret's name says (sh.helm.release.v1.<release>.v<N>), which is
// what counts for a record whose labels were removed or changed.
func releasesOf(o client.Object) []string {
	var names []string
	if n := o.GetLabels()["name"]; n != "" {
		names = append(names, n)
	}
	rest, ok := strings.CutPrefix(o.GetName(), releaseRecordKeyPrefix)
	if i := strings.LastIndex(rest, ".v"); ok && i > 0 && !slices.Contains(names, rest[:i]) {
		names = append(names, rest[:i])
	}
	return names
}
