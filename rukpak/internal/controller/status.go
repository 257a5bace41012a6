package controller

// Status: the conditions of a reconcile are decided in one place (setStatus) from what its steps
// learned and the step error that stopped them; status.history mirrors the release history; the
// Events of a reconcile are recorded from the change of its conditions.
//
// The status contract. The status is output: what is installed is the release history (the Engine),
// what is wanted is the spec. A reconcile reads the status it wrote before only in these places, each
// labelled "Status read (N)" where it happens (docs/rukpak.md, "Status read-backs", says the same):
//
//  1. unpack: status.resolvedSource is passed to the unpacker as Options.Previous, so that a source
//     that resolves to the same digest, commit or ETag is not fetched again.
//  2. unpack: status.contentHash is kept when the unpacker reports the content unchanged (it is the
//     hash of that same content; nothing is hashed again).
//  3. healthOnly: a reconcile only re-checks health when status.installedRevision is the revision
//     the last apply of this process installed and Installed is True; any doubt applies again.
//  4. setStatus: status.installedRevision > 0 says something stays installed while a new revision
//     fails or waits (the messages say which revision, and Healthy is not reset to Unknown).
//  5. setStatus: status.history[0] is compared with the applied revision, to rewrite the history
//     after a crash between recording a revision and writing the status.
//  6. setStatus and setPaused: the previous conditions: an Unpacked condition is kept when nothing
//     was unpacked, and the Paused condition's lastTransitionTime is when a pause began.
//  7. blockedByRecords: an Installed condition with reason ReleaseCorrupt makes a change of the
//     release records reconcile the BundleDeployment.
//  8. setStatus: while an unpack waits its turn (UnpackPending) and nothing is installed, an
//     Installed=False of this generation that says why the last attempt failed (ObjectConflict,
//     InstallFailed, ...) stays: the wait is the retry of that attempt (e.g. after a restart, whose
//     pull limiter has not seen the registry answer yet), not news that replaces its reason.
//
// Bookkeeping reads, never inputs of what is written: the previous conditions against the new ones
// for the Events of each transition (emitEvents, reconcilePaused), the conditions and
// status.installedRevision for the metrics (Metrics.observe) and the pause message, and the whole
// previous status to patch only a change (statuspatch.IfChanged).

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olmv1/olmv1/platform/conditionevents"
	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
	"github.com/olmv1/olmv1/rukpak/internal/health"
)

// setStatus is the one place conditions are decided.
func (r *BundleDeploymentReconciler) setStatus(bd *rukpakv1alpha1.BundleDeployment, st *state, err error) {
	gen := bd.Generation
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	bd.Status.ObservedGeneration = gen
	setNotPaused(bd)
	var se *step.Error
	if err != nil {
		var ok bool
		if se, ok = step.As(err); !ok {
			se = step.Failed(rukpakv1alpha1.TypeInstalled, rukpakv1alpha1.ReasonInstallFailed, err)
		}
	}

	if st.unpacked != nil {
		bd.Status.ResolvedSource = st.unpacked.ResolvedSource.DeepCopy()
		bd.Status.ContentHash = st.hash
	}
	switch {
	case se != nil && se.Condition == rukpakv1alpha1.TypeUnpacked:
		set(rukpakv1alpha1.TypeUnpacked, metav1.ConditionFalse, se.Reason, se.Error())
	case st.unpacked != nil:
		set(rukpakv1alpha1.TypeUnpacked, metav1.ConditionTrue, rukpakv1alpha1.ReasonUnpackSucceeded,
			fmt.Sprintf("unpacked %s (%s)", st.unpacked.ResolvedSource.String(), st.hash))
	case meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeUnpacked) == nil: // Status read (6): else the previous Unpacked stays
		set(rukpakv1alpha1.TypeUnpacked, metav1.ConditionUnknown, rukpakv1alpha1.ReasonUnpackPending, "waiting for the bundle to be unpacked")
	}

	installed := bd.Status.InstalledRevision > 0 // Status read (4): something stays installed
	switch {
	case st.applied != nil && st.applied.Waiting != nil:
		// Applied up to a phase whose probe waits: the revision is not installed yet (it stays
		// pending; the next reconcile goes on from there).
		msg := fmt.Sprintf("revision %d is being applied, %d objects so far: %v", st.applied.Revision, st.count, st.applied.Waiting)
		if installed {
			msg += fmt.Sprintf(" (revision %d stays installed)", bd.Status.InstalledRevision)
		}
		set(rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonProgressionProbeWaiting, msg)
	case st.applied != nil:
		bd.Status.InstalledRevision = int64(st.applied.Revision)
		msg := fmt.Sprintf("revision %d is installed (%d objects)", st.applied.Revision, st.count)
		if st.description != "" {
			msg = fmt.Sprintf("revision %d is installed (%d objects, %s)", st.applied.Revision, st.count, st.description)
		}
		if len(st.leftAlone) > 0 {
			msg += fmt.Sprintf("; %d object(s) earlier revisions installed were left in place because another owner holds them now: %s",
				len(st.leftAlone), keyList(st.leftAlone))
		}
		if st.applied.HeldBack != "" {
			set(rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonUpgradeFailed, fmt.Sprintf(
				"the content the spec asks for was rolled back and is not applied again until spec.source or spec.config changes, or the annotation %s is set to a new value: %s; %s",
				RetryUpgradeAnnotation, st.applied.HeldBack, msg))
		} else {
			set(rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded, msg)
		}
		// Re-applying the deployed revision leaves the history as it is, unless it does not show that
		// revision yet (a crash between recording a revision and writing the status). Status read (5).
		// The history an Apply read and wrote (with a Healthy time recorded since) needs no listing.
		if st.applied.Changed || st.historyChanged || len(bd.Status.History) == 0 || bd.Status.History[0].Revision != int64(st.applied.Revision) {
			if st.applied.History != nil {
				setHistory(bd, st.applied.History)
			} else {
				r.readHistory(bd)
			}
		}
	case se != nil && se.Condition == rukpakv1alpha1.TypeInstalled:
		msg := se.Error()
		if installed {
			msg += fmt.Sprintf(" (revision %d stays installed)", bd.Status.InstalledRevision)
		}
		set(rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, se.Reason, msg)
		r.readHistory(bd)
	case !installed && se != nil && se.Reason == rukpakv1alpha1.ReasonUnpackPending && lastAttemptFailed(bd):
		// Status read (8): the attempt being retried failed, and its reason stays until the retry
		// ends; Unpacked says that the unpack waits, and why.
	case !installed && se != nil && se.Reason == rukpakv1alpha1.ReasonUnpackPending:
		// The unpack waits its turn (source.KindPending): say why where the Operator reads it.
		set(rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonInstallPending, "nothing is installed until the bundle is unpacked: "+se.Error())
	case !installed:
		set(rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonInstallPending, "nothing is installed until the bundle is unpacked and rendered")
	}

	switch {
	case st.progress != nil && st.progress.exceeded && !st.progress.rolledBack && st.healthy != nil:
		reason := rukpakv1alpha1.ReasonProgressDeadlineExceeded
		if st.progress.blocked != "" {
			reason = rukpakv1alpha1.ReasonRollbackBlocked
		}
		set(rukpakv1alpha1.TypeHealthy, metav1.ConditionFalse, reason, st.progress.message(st.healthy))
	case st.applied != nil && st.healthy == nil:
		set(rukpakv1alpha1.TypeHealthy, metav1.ConditionTrue, rukpakv1alpha1.ReasonHealthy, "every installed object is ready")
	case st.applied != nil && health.IsProbeWaiting(st.healthy):
		set(rukpakv1alpha1.TypeHealthy, metav1.ConditionFalse, rukpakv1alpha1.ReasonProgressionProbeWaiting, st.healthy.Error())
	case st.applied != nil:
		set(rukpakv1alpha1.TypeHealthy, metav1.ConditionFalse, rukpakv1alpha1.ReasonUnhealthy, st.healthy.Error())
	case bd.Status.InstalledRevision == 0:
		set(rukpakv1alpha1.TypeHealthy, metav1.ConditionUnknown, rukpakv1alpha1.ReasonHealthUnknown, "nothing is installed yet")
	}
}

// lastAttemptFailed reports whether bd's Installed condition says that an install of its current
// generation failed (False, with a reason other than InstallPending).
func lastAttemptFailed(bd *rukpakv1alpha1.BundleDeployment) bool {
	c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled)
	return c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == bd.Generation && c.Reason != rukpakv1alpha1.ReasonInstallPending
}

// readHistory reads the revision history and copies it into status.history (setHistory).
func (r *BundleDeploymentReconciler) readHistory(bd *rukpakv1alpha1.BundleDeployment) {
	revs, err := r.Engine.History(bd.Name)
	if err != nil {
		return
	}
	setHistory(bd, revs)
}

// setHistory copies the newest deployed and superseded revisions of revs (newest first) into
// status.history.
func setHistory(bd *rukpakv1alpha1.BundleDeployment, revs []apply.Revision) {
	var hist []rukpakv1alpha1.BundleDeploymentRevision
	for _, rev := range revs {
		if rev.Status != "deployed" && rev.Status != "superseded" {
			continue
		}
		h := rukpakv1alpha1.BundleDeploymentRevision{Revision: int64(rev.Version), InstalledAt: metav1.NewTime(rev.Deployed), Description: rev.Description}
		if !rev.HealthyAt.IsZero() {
			t := metav1.NewTime(rev.HealthyAt)
			h.HealthyAt = &t
		}
		h.ContentHash, _ = rev.Info["contentHash"].(string)
		h.ChartVersion, _ = rev.Info[InfoChartVersion].(string)
		h.ValuesHash, _ = rev.Info[InfoValuesHash].(string)
		h.ResolvedSource = resolvedFromInfo(rev.Info["resolvedSource"])
		hist = append(hist, h)
		if len(hist) == 10 {
			break
		}
	}
	bd.Status.History = hist
}

// eventPolicy is the policy of the Events of condition changes: one per transition, a Warning while a
// condition fails. Paused=False is no failure, and the pending reasons mean "not there yet".
var eventPolicy = conditionevents.Policy{
	NotFailures: []string{rukpakv1alpha1.TypePaused},
	Progressing: []string{rukpakv1alpha1.ReasonUnpackPending, rukpakv1alpha1.ReasonInstallPending, rukpakv1alpha1.ReasonHealthUnknown,
		rukpakv1alpha1.ReasonProgressionProbeWaiting},
}

// emitEvents records what this reconcile installed and left in place, then one Event per condition
// transition from orig to bd.
func (r *BundleDeploymentReconciler) emitEvents(orig, bd *rukpakv1alpha1.BundleDeployment, st *state) {
	// A first install (Installed becomes True) is told by the Installed condition's own Event, which
	// names the revision; an upgrade (Installed stays True) by this one.
	if st.applied != nil && st.applied.Changed && meta.IsStatusConditionTrue(orig.Status.Conditions, rukpakv1alpha1.TypeInstalled) {
		conditionevents.Normal(r.Recorder, bd, "Installed", "Install", fmt.Sprintf("installed revision %d (%s)", st.applied.Revision, st.hash))
	}
	if st.applied != nil && st.applied.Changed && len(st.leftAlone) > 0 {
		conditionevents.Normal(r.Recorder, bd, "LeftAlone", "Prune", fmt.Sprintf("revision %d no longer contains %d object(s) but another owner holds them now, so they were left in place: %s",
			st.applied.Revision, len(st.leftAlone), keyList(st.leftAlone)))
	}
	eventPolicy.Record(r.Recorder, bd, orig.Status.Conditions, bd.Status.Conditions)
}
