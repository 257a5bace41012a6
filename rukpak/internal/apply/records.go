package apply

// Unreadable release records. A revision's record is the Secret sh.helm.release.v1.<name>.v<N>
// (secrets.go). When one of a release's records cannot be read, or contradicts its own name and
// labels, rukpak cannot know what that revision installed, so it does not guess: Apply and
// Uninstall stop before changing anything, with a *Error of reason ReasonReleaseCorrupt that names
// the Secret. Nothing is applied, pruned or deleted, and the installed objects keep running.
//
// Recovery is the user's decision, and loses nothing that was still readable:
//   - set the record aside, keeping it for inspection:
//     kubectl label secret -n <namespace> <secret> owner=rukpak-set-aside --overwrite
//     (rukpak and `helm history` then no longer read it, and rukpak numbers its next revision past it);
//   - or delete it (after `kubectl get secret -o yaml` if it is worth keeping).
// The next reconcile (at once: the controller watches release records and reconciles a
// BundleDeployment stuck on one) records a new revision from spec, numbered after the newest remaining record and
// past any record set aside (a deleted record's number is used again), and adopts the existing objects that carry the BundleDeployment's owner labels (their UIDs stay);
// without a readable deployed revision it is an install, so it prunes nothing: an object only the
// lost record listed stays in place.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// ReasonReleaseCorrupt is the Installed condition's reason when a release record cannot be read.
const ReasonReleaseCorrupt = rukpakv1alpha1.ReasonReleaseCorrupt

// SetAsideOwner is the value of a release Secret's "owner" label that sets it aside: it is no
// longer part of the release's history (which selects owner=helm), and is kept for inspection.
const SetAsideOwner = "rukpak-set-aside"

// releaseOwner is the "owner" label of Helm release records.
const releaseOwner = "helm"

// CorruptReleaseError is a release record that cannot be read, or whose content contradicts its
// name or labels.
type CorruptReleaseError struct {
	// Namespace and Secret name the record ("" Namespace when the storage is not Secrets).
	Namespace, Secret string
	// Problem says what is wrong with it.
	Problem string
	// Others names further unreadable records of the same release.
	Others []string
}

func (e *CorruptReleaseError) Error() string {
	ns := ""
	if e.Namespace != "" {
		ns = "-n " + e.Namespace + " "
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the release record Secret %s%s cannot be used: %s", e.qualified(), e.describe(), e.Problem)
	if len(e.Others) > 0 {
		fmt.Fprintf(&b, " (and %d more unreadable record(s): %s)", len(e.Others), strings.Join(e.Others, ", "))
	}
	fmt.Fprintf(&b, ". rukpak does not know what that revision installed, so it changes nothing and leaves the installed objects running until the record is dealt with: "+
		"keep it for inspection with `kubectl label secret %s%s owner=%s --overwrite`, or delete it. "+
		"As soon as it is set aside or deleted (rukpak watches release records) "+
		"rukpak records the next revision from spec and adopts the objects that carry this BundleDeployment's owner labels",
		ns, e.Secret, SetAsideOwner)
	return b.String()
}

func (e *CorruptReleaseError) qualified() string {
	if e.Namespace == "" {
		return e.Secret
	}
	return e.Namespace + "/" + e.Secret
}

// describe is " (revision N of BundleDeployment x)" when the Secret's name says so.
func (e *CorruptReleaseError) describe() string {
	name, version, ok := parseKey(e.Secret)
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (revision %d of BundleDeployment %q)", version, name)
}

// SetAsideError is returned by ChunkedSecrets.Create when the record's name is taken by a Secret
// set aside (owner=rukpak-set-aside): the release's next revision takes the next number.
type SetAsideError struct{ Secret string }

func (e *SetAsideError) Error() string {
	return fmt.Sprintf("release Secret %s is set aside (owner=%s); use the next revision number", e.Secret, SetAsideOwner)
}

// Is makes a SetAsideError a driver.ErrReleaseExists for callers that only know Helm's errors.
func (e *SetAsideError) Is(target error) bool { return target == driver.ErrReleaseExists }

const keyPrefix = "sh.helm.release.v1."

// recordKey is Helm's name of the record of revision version of release name.
func recordKey(name string, version int) string {
	return keyPrefix + name + ".v" + strconv.Itoa(version)
}

// parseKey splits a record key into release name and revision.
func parseKey(key string) (string, int, bool) {
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok {
		return "", 0, false
	}
	i := strings.LastIndex(rest, ".v")
	if i <= 0 {
		return "", 0, false
	}
	v, err := strconv.Atoi(rest[i+2:])
	if err != nil || v <= 0 {
		return "", 0, false
	}
	return rest[:i], v, true
}

// knownStatuses are the statuses Helm writes; rukpak writes a subset.
var knownStatuses = map[release.Status]bool{
	release.StatusUnknown: true, release.StatusDeployed: true, release.StatusUninstalled: true,
	release.StatusSuperseded: true, release.StatusFailed: true, release.StatusUninstalling: true,
	release.StatusPendingInstall: true, release.StatusPendingUpgrade: true, release.StatusPendingRollback: true,
}

// checkRecord reports what is wrong with release r decoded from Secret s: an empty string when its
// content, its Secret's name and its labels agree. A record that disagrees with them would be
// written back to another Secret (Helm derives the key from the content) or read as another status.
func checkRecord(s *corev1.Secret, r *release.Release) string {
	switch {
	case r.Info == nil:
		return "the record has no status (info)"
	case !knownStatuses[r.Info.Status]:
		return fmt.Sprintf("the record's status %q is not a Helm release status", r.Info.Status)
	case r.Name == "" || r.Version <= 0:
		return fmt.Sprintf("the record has no release name or revision (name %q, version %d)", r.Name, r.Version)
	case s.Name != recordKey(r.Name, r.Version):
		return fmt.Sprintf("it holds revision %d of release %q, whose record is named %s", r.Version, r.Name, recordKey(r.Name, r.Version))
	}
	want := map[string]string{"owner": releaseOwner, "name": r.Name, "version": strconv.Itoa(r.Version), "status": string(r.Info.Status)}
	var wrong []string
	for _, k := range []string{"owner", "name", "version", "status"} {
		if got := s.Labels[k]; got != want[k] {
			wrong = append(wrong, fmt.Sprintf("%s=%q (the record says %q)", k, got, want[k]))
		}
	}
	if len(wrong) > 0 {
		return "its labels do not match the record it holds: " + strings.Join(wrong, ", ")
	}
	return ""
}

// corrupt turns an unreadable record found in err into a *Error with ReasonReleaseCorrupt; other
// errors are returned as they are.
func corrupt(err error) error {
	var ce *CorruptReleaseError
	if errors.As(err, &ce) {
		return &Error{Reason: ReasonReleaseCorrupt, Err: ce}
	}
	return err
}

// maxSetAside bounds how many set-aside records in a row a new revision's number skips.
const maxSetAside = 100

// create records a new revision, numbered past the records set aside (SetAsideOwner) that hold
// its number, once the oldest records beyond the history kept are deleted (pruneRecords).
func (e *Engine) create(rel *release.Release, revs *revisions) error {
	if err := e.pruneRecords(rel.Name, revs); err != nil {
		return err
	}
	for skipped := 0; ; skipped++ {
		err := e.Storage.Driver.Create(recordKey(rel.Name, rel.Version), rel)
		var sa *SetAsideError
		if !errors.As(err, &sa) || skipped == maxSetAside {
			return err
		}
		rel.Version++
	}
}

// pruneRecords makes room for one more record of release name: it deletes the oldest records
// beyond Storage.MaxHistory-1, never the deployed revision, as Helm's Storage.Create does, but
// from the history revs already holds (Helm's reads it again, one more listing per revision).
func (e *Engine) pruneRecords(name string, revs *revisions) error {
	keep := e.Storage.MaxHistory - 1
	if e.Storage.MaxHistory <= 0 || len(revs.all) <= keep {
		return nil
	}
	excess := len(revs.all) - keep
	var kept []*release.Release
	var errs []error
	for _, r := range revs.all {
		if excess == 0 || (revs.deployed != nil && r.Version == revs.deployed.Version) {
			kept = append(kept, r)
			continue
		}
		excess--
		if _, err := e.Storage.Delete(name, r.Version); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
			errs = append(errs, fmt.Errorf("deleting revision %d of release %q beyond the history kept: %w", r.Version, name, err))
			kept = append(kept, r)
		}
	}
	revs.all = kept
	return errors.Join(errs...)
}

// recordedObjects decodes what each of revs applied; a manifest that cannot be decoded makes its
// record unreadable.
func (e *Engine) recordedObjects(revs ...*release.Release) ([][]*unstructured.Unstructured, error) {
	out := make([][]*unstructured.Unstructured, 0, len(revs))
	for _, r := range revs {
		objs, err := decodeManifest(r.Manifest)
		if err != nil {
			return nil, &Error{Reason: ReasonReleaseCorrupt, Err: &CorruptReleaseError{
				Namespace: e.recordNamespace(), Secret: recordKey(r.Name, r.Version), Problem: "its manifest " + strings.TrimPrefix(err.Error(), "decoding a stored release manifest: ")}}
		}
		out = append(out, objs)
	}
	return out, nil
}

// recordNamespace is where the records are kept, for messages.
func (e *Engine) recordNamespace() string {
	if d, ok := e.Storage.Driver.(*ChunkedSecrets); ok {
		return d.Namespace
	}
	return ""
}
