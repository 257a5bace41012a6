package controller

// Rendering is two parts: gather reads from the cluster what the class's Renderer needs (the helm
// valuesFrom documents and the cluster's capabilities, the scope of kinds only the cluster defines)
// into its Request, then the Renderer, a pure function of that Request, renders it. Both are timed as
// the render step.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

// render renders the unpacked content with the class's Renderer (st.objects, st.description,
// st.info). A bundle or configuration that retrying cannot fix fails Unpacked terminally.
func (r *BundleDeploymentReconciler) render(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment, st *state) error {
	defer r.Metrics.observeStep(StepRender, time.Now())
	renderer := r.Renderers[bd.Spec.ProvisionerClassName]
	req, err := r.gather(ctx, renderer, provisioner.Request{
		Content:          os.DirFS(st.unpacked.Dir),
		Name:             bd.Name,
		InstallNamespace: bd.Spec.InstallNamespace,
		Config:           bd.Spec.Config,
	})
	if err != nil {
		return step.Failed(rukpakv1alpha1.TypeUnpacked, rukpakv1alpha1.ReasonInvalidBundle, fmt.Errorf("rendering the bundle: %w", err))
	}
	res, err := provisioner.RenderDescribed(ctx, renderer, req)
	var invalid *provisioner.InvalidBundleError
	switch {
	case errors.As(err, &invalid):
		reason := invalid.Reason
		if reason == "" {
			reason = rukpakv1alpha1.ReasonInvalidBundle
		}
		return step.Terminal(rukpakv1alpha1.TypeUnpacked, reason, err)
	case err != nil:
		return step.Failed(rukpakv1alpha1.TypeUnpacked, rukpakv1alpha1.ReasonInvalidBundle, fmt.Errorf("rendering the bundle: %w", err))
	}
	st.objects, st.description = res.Objects, res.Description
	if res.RevisionInfo != nil {
		st.info = make(map[string]interface{}, len(res.RevisionInfo))
		for k, v := range res.RevisionInfo {
			st.info[k] = v
		}
	}
	return nil
}

// gather fills req with what renderer needs from the cluster (Gatherer; without one, only the scopes
// of kinds, from the Client's RESTMapper). A failed read is retried: the cluster may answer later.
func (r *BundleDeploymentReconciler) gather(ctx context.Context, renderer provisioner.Renderer, req provisioner.Request) (provisioner.Request, error) {
	g := r.Gatherer
	if g == nil {
		g = &provisioner.Gatherer{Mapper: r.Client.RESTMapper()}
	}
	return g.Gather(ctx, renderer, req)
}
