package controller

// Progression probes: spec.progressionProbes are compiled once per reconcile, before anything is
// unpacked or applied, so that a CEL expression that does not compile is reported (Installed=False,
// reason InvalidProgressionProbe) instead of being discovered object by object. The compiled probes
// become part of the health plan of the installed revision (installedRevision), and the kinds they
// select are watched for status changes like the built-in status kinds (Watches.WatchStatus).

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/health"
)

// compileProbes compiles bd's progression probes into st.probes. A probe that cannot be used is a
// terminal error: retrying cannot fix it, changing the spec can.
func (r *BundleDeploymentReconciler) compileProbes(_ context.Context, bd *rukpakv1alpha1.BundleDeployment, st *state) error {
	probes, err := health.CompileProbes(bd.Spec.ProgressionProbes)
	if err != nil {
		return step.Terminal(rukpakv1alpha1.TypeInstalled, rukpakv1alpha1.ReasonInvalidProgressionProbe,
			fmt.Errorf("spec.progressionProbes: %w (fix the probe: nothing is applied until it can be used)", err))
	}
	st.probes, st.probesCompiled = probes, true
	return nil
}

// healthPlan is the health plan of objs under bd's progression probes (compiled by compileProbes
// earlier in the reconcile, or now for a rollback in a health-only reconcile). Probes that do not
// compile were reported by compileProbes; here they are left out.
func (r *BundleDeploymentReconciler) healthPlan(bd *rukpakv1alpha1.BundleDeployment, st *state, objs []*unstructured.Unstructured) health.Plan {
	if !st.probesCompiled {
		st.probes, _ = health.CompileProbes(bd.Spec.ProgressionProbes)
		st.probesCompiled = true
	}
	plan := health.NewProbedPlan(objs, st.probes)
	if r.Watches != nil {
		r.Watches.WatchStatus(plan.ProbedKinds())
	}
	return plan
}
