package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/olmv1/olmv1/platform/conditionevents"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

// Progress deadline (spec.progressDeadline, spec.upgradeFailurePolicy). When a revision is first
// seen Healthy, the time is recorded with it (apply.Engine.MarkHealthy; status.history healthyAt).
// A revision that was never Healthy progressDeadline after it was applied has failed: Healthy=False
// with reason ProgressDeadlineExceeded. With Rollback, the newest earlier revision that was Healthy
// is re-applied as a new revision (apply.Engine.Rollback), unless the failed revision is itself a
// rollback, no earlier revision was ever Healthy, or the CRD upgrade-safety preflight refuses the
// earlier revision's CRDs: then Healthy=False with reason RollbackBlocked, and nothing changes.
// After a rollback the spec's content is not applied again until the spec (source, config) or the
// RetryUpgradeAnnotation changes (attempt): Installed=False, reason UpgradeFailed, says so.

// RetryUpgradeAnnotation, set to a new value, makes rukpak try again content that a rollback
// abandoned, without changing the spec.
const RetryUpgradeAnnotation = "core.rukpak.io/retry-upgrade"

// attempt identifies what the spec asks for: content a rollback abandoned is not applied again for
// the same attempt. Pausing, the deadline and the policies are not part of it.
func attempt(bd *rukpakv1alpha1.BundleDeployment) string {
	b, _ := json.Marshal(struct {
		Class  rukpakv1alpha1.ProvisionerClassName
		NS     string
		Source rukpakv1alpha1.Source
		Config *rukpakv1alpha1.BundleConfig
		Retry  string
	}{bd.Spec.ProvisionerClassName, bd.Spec.InstallNamespace, bd.Spec.Source, bd.Spec.Config, bd.Annotations[RetryUpgradeAnnotation]})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// progress is what the deadline decided about the installed revision.
type progress struct {
	// exceeded: revision was never Healthy within deadline of being applied (at since).
	exceeded bool
	revision int
	deadline time.Duration
	since    time.Time
	// rollbackTo is the revision to return to (Rollback policy); blocked says why there is none.
	rollbackTo int
	blocked    string
	// recheck is when the deadline passes, while it has not yet.
	recheck time.Duration
	// rolledBack and rollbackErr are what rolling back did.
	rolledBack  bool
	rollbackErr error
}

// decideProgress applies the deadline to revision current of hist (newest first).
func decideProgress(now time.Time, deadline time.Duration, policy rukpakv1alpha1.UpgradeFailurePolicy, current int, hist []apply.Revision) progress {
	var cur *apply.Revision
	for i := range hist {
		if hist[i].Version == current {
			cur = &hist[i]
		}
	}
	if cur == nil || !cur.HealthyAt.IsZero() {
		return progress{} // once Healthy, later trouble is Unhealthy, not a failed install or upgrade
	}
	if left := cur.Deployed.Add(deadline).Sub(now); left > 0 {
		return progress{recheck: left}
	}
	p := progress{exceeded: true, revision: current, deadline: deadline, since: cur.Deployed}
	if policy != rukpakv1alpha1.UpgradeFailurePolicyRollback {
		return p
	}
	if cur.RollbackFrom != 0 {
		p.blocked = fmt.Sprintf("revision %d is itself the rollback of revision %d, and a rollback is not rolled back again", current, cur.RollbackFrom)
		return p
	}
	for _, r := range hist {
		if r.Version < current && !r.HealthyAt.IsZero() && (r.Status == "superseded" || r.Status == "deployed") {
			p.rollbackTo = r.Version
			return p
		}
	}
	p.blocked = "no earlier revision was ever Healthy"
	if current == 1 {
		p.blocked = "it is the first revision, there is nothing to roll back to"
	}
	return p
}

// message is the Healthy condition's message for an exceeded deadline.
func (p *progress) message(notReady error) string {
	msg := fmt.Sprintf("revision %d is not Healthy %s after it was applied at %s (spec.progressDeadline): %v",
		p.revision, p.deadline, p.since.UTC().Format(time.RFC3339), notReady)
	switch {
	case p.blocked != "":
		msg += "; upgradeFailurePolicy Rollback, but it is not rolled back: " + p.blocked + ". It stays installed: fix what is not ready, or change the spec"
	case p.rollbackErr != nil:
		msg += fmt.Sprintf("; rolling back to revision %d failed, retrying: %v", p.rollbackTo, p.rollbackErr)
	case p.rollbackTo == 0:
		msg += "; upgradeFailurePolicy Hold: it stays installed. Fix what is not ready, or change the spec to install another revision"
	}
	return msg
}

// checkProgress records when the installed revision became Healthy and applies the progress
// deadline to it, rolling back when the policy says so.
func (r *BundleDeploymentReconciler) checkProgress(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment, st *state) {
	if st.applied == nil {
		return
	}
	rev := st.applied.Revision
	if st.healthy == nil {
		if v, ok := r.healthyMarked.Load(bd.Name); ok && v.(int) == rev {
			return
		}
		recorded, err := r.Engine.MarkHealthy(bd.Name, rev, time.Now())
		if err != nil {
			log.FromContext(ctx).Error(err, "recording when the revision became healthy", "revision", rev)
			return
		}
		r.healthyMarked.Store(bd.Name, rev)
		marked := !recorded.IsZero()
		st.historyChanged = marked
		if marked && st.applied.History != nil {
			// What the record now says, without reading the history again.
			st.applied.History = withHealthyAt(st.applied.History, rev, recorded)
			if v, ok := r.installed.Load(bd.Name); ok && v.(*installedState).revision == rev {
				last := *v.(*installedState)
				last.history = st.applied.History
				r.installed.Store(bd.Name, &last)
			}
		}
		return
	}
	if bd.Spec.ProgressDeadline == nil {
		return
	}
	hist, err := r.Engine.History(bd.Name)
	if err != nil {
		log.FromContext(ctx).Error(err, "reading the revision history for the progress deadline")
		return
	}
	p := decideProgress(time.Now(), bd.Spec.ProgressDeadline.Duration, bd.Spec.UpgradeFailurePolicy, rev, hist)
	st.progress = &p
	if !p.exceeded || p.rollbackTo == 0 {
		return
	}
	why := fmt.Sprintf("rollback to revision %d: revision %d was not Healthy within the progress deadline (%s): %v", p.rollbackTo, rev, p.deadline, st.healthy)
	res, err := r.Engine.Rollback(ctx, apply.RollbackRequest{Request: r.applyRequest(bd), From: rev, To: p.rollbackTo, Why: why})
	r.Metrics.observeRollback(err)
	var ae *apply.Error
	switch {
	case errors.As(err, &ae) && ae.Reason == apply.ReasonPreflightFailed:
		p.blocked = fmt.Sprintf("revision %d's CustomResourceDefinitions cannot replace the installed ones: %v", p.rollbackTo, err)
		st.progress = &p
		return
	case err != nil:
		p.rollbackErr = err
		st.progress = &p
		return
	}
	p.rolledBack = true
	st.progress = &p
	res.HeldBack = why
	if err := r.installedRevision(ctx, bd, st, res); err != nil {
		log.FromContext(ctx).Error(err, "watching the applied objects for drift", "revision", res.Revision)
	}
	r.checkHealth(ctx, st)
	conditionevents.Warning(r.Recorder, bd, "RolledBack", "Rollback", fmt.Sprintf("revision %d: %s", res.Revision, why))
}

// installedRevision notes what res installed, for the status, health-only reconciles and the
// drift watches; it returns the error of starting those watches (the caller decides what it means).
func (r *BundleDeploymentReconciler) installedRevision(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment, st *state, res *apply.Result) error {
	st.applied, st.count, st.plan = res, len(res.Objects), r.healthPlan(bd, st, res.Objects)
	st.leftAlone = res.LeftAlone
	r.installed.Store(bd.Name, &installedState{generation: bd.Generation, annotations: maps.Clone(bd.Annotations),
		revision: res.Revision, objects: st.count, plan: st.plan, leftAlone: res.LeftAlone, description: st.description, heldBack: res.HeldBack,
		history: res.History})
	if r.Watches == nil {
		return nil
	}
	if err := r.Watches.Ensure(ctx, res.Objects); err != nil {
		return err
	}
	r.Metrics.watchedKinds(r.Watches.Kinds())
	return nil
}

// withHealthyAt is hist (newest first) with revision rev Healthy at at (the time
// apply.Engine.MarkHealthy recorded); hist itself is not changed.
func withHealthyAt(hist []apply.Revision, rev int, at time.Time) []apply.Revision {
	out := slices.Clone(hist)
	for i := range out {
		if out[i].Version == rev {
			out[i].HealthyAt = at
		}
	}
	return out
}
