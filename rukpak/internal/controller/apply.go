package controller

// Applying a rendered revision (apply.Engine), and checking the health of what is installed.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

// applyRequest is what every apply of bd has in common: names, policies and the preflight.
func (r *BundleDeploymentReconciler) applyRequest(bd *rukpakv1alpha1.BundleDeployment) apply.Request {
	req := apply.Request{
		Name:            bd.Name,
		Namespace:       bd.Spec.InstallNamespace,
		CollisionPolicy: bd.Spec.CollisionPolicy,
		Attempt:         attempt(bd),
	}
	if r.Preflight != nil && bd.Annotations[SkipCRDUpgradeSafetyAnnotation] != "true" {
		req.Preflight = r.Preflight
	}
	return req
}

// apply applies the rendered objects as a revision (st.applied and what installedRevision records).
func (r *BundleDeploymentReconciler) apply(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment, st *state) error {
	req := r.applyRequest(bd)
	req.Objects = st.objects
	if len(st.probes) > 0 {
		req.Phases = &apply.PhaseGate{Probes: st.probes, Reader: r.Engine.Client}
	}
	req.Identity = revisionIdentity(st.hash, &st.unpacked.ResolvedSource)
	req.Info = map[string]interface{}{"contentHash": st.hash, "resolvedSource": st.unpacked.ResolvedSource}
	for k, v := range st.info {
		req.Info[k] = v
	}
	start := time.Now()
	res, err := r.Engine.Apply(ctx, req)
	r.Metrics.observeStep(StepApply, start)
	r.Metrics.observeApply(res, err)
	var ae *apply.Error
	if errors.As(err, &ae) {
		se := &step.Error{Condition: rukpakv1alpha1.TypeInstalled, Reason: ae.Reason, Terminal: ae.Reason == apply.ReasonPreflightFailed, Err: err}
		if ae.Reason == apply.ReasonObjectConflict {
			// The colliding object is not watched (it is not ours): look again now and then, and at
			// once when the BundleDeployment changes (e.g. its collisionPolicy).
			se.After(unhealthyRecheck)
		}
		return se
	}
	if err != nil {
		return step.Failed(rukpakv1alpha1.TypeInstalled, rukpakv1alpha1.ReasonInstallFailed, err)
	}
	if err := r.installedRevision(ctx, bd, st, res); err != nil {
		return step.Failed(rukpakv1alpha1.TypeInstalled, rukpakv1alpha1.ReasonInstallFailed,
			fmt.Errorf("installed revision %d but cannot watch its objects for drift: %w", res.Revision, err))
	}
	return nil
}

// revisionIdentity is what makes content a revision of its own besides the objects it renders: its
// hash and, for images and git, the digest or commit it was unpacked from. A new bundle version
// whose rendered objects are the same as the installed one's (a CSV whose version is not rendered
// into any object) is a new revision, so history, installedRevision and the Operator's installed
// bundle agree. A ConfigMap or HTTP source that changed without changing the content is not.
func revisionIdentity(contentHash string, rs *rukpakv1alpha1.ResolvedSource) string {
	id := contentHash
	switch {
	case rs == nil:
	case rs.Image != nil:
		id += " image " + rs.Image.Ref
	case rs.Git != nil:
		id += " git " + rs.Git.Repository + "@" + rs.Git.Commit
	}
	return id
}

// checkHealth checks the installed objects (st.plan) and records the first problem in st.healthy.
func (r *BundleDeploymentReconciler) checkHealth(ctx context.Context, st *state) {
	defer r.Metrics.observeStep(StepHealth, time.Now())
	reader := r.HealthReader
	if reader == nil {
		reader = r.Client
	}
	st.healthy = st.plan.Check(ctx, reader, r.EndpointReader)
	if st.healthy == nil && st.applied != nil && st.applied.Waiting != nil {
		st.healthy = st.applied.Waiting // the cache may be ahead of the phase gate's read: wait for the next apply
	}
}
