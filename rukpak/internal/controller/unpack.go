package controller

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// unpackKey names a BundleDeployment's unpacked content in the Unpacker's cache.
func unpackKey(bd *rukpakv1alpha1.BundleDeployment) string { return "bundledeployment/" + bd.Name }

// unpack fetches spec.source and hashes what it holds (st.unpacked, st.hash). Content the source
// reports unchanged keeps the hash of the status.
func (r *BundleDeploymentReconciler) unpack(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment, st *state) error {
	defer r.Metrics.observeStep(StepUnpack, time.Now())
	if r.Renderers[bd.Spec.ProvisionerClassName] == nil {
		return step.Terminal(rukpakv1alpha1.TypeInstalled, rukpakv1alpha1.ReasonInstallFailed,
			fmt.Errorf("provisioner %q is not supported by this rukpak; use one of %v", bd.Spec.ProvisionerClassName, r.classes()))
	}
	res, err := r.Unpacker.Unpack(ctx, unpackKey(bd), bd.Spec.Source, source.Options{
		Namespace: r.Namespace,
		Previous:  bd.Status.ResolvedSource, // Status read (1): not fetched again when it resolves the same
	})
	if err != nil {
		if !source.IsRetryable(err) {
			// Too large, an invalid source or content: only a change of the source (or a poll that
			// finds it republished) can help, as for catalogd.
			// The reason is UnpackFailed, or SignatureInvalid (spec.source.image.verify), or Unsigned for
			// a non-image source under --require-image-signatures.
			return step.Terminal(rukpakv1alpha1.TypeUnpacked, source.ReasonOf(err), err)
		}
		// After: a server that said when to come back (Retry-After) is asked again then. The
		// reason is UnpackFailed, or Unsigned (spec.source.image.verify, --require-image-signatures).
		return step.Failed(rukpakv1alpha1.TypeUnpacked, source.ReasonOf(err), err).After(source.RetryAfterOf(err))
	}
	st.unpacked = res
	if res.Unchanged && bd.Status.ContentHash != "" { // Status read (2): the hash of the same content
		st.hash = bd.Status.ContentHash
		return nil
	}
	st.hash, err = ContentHash(os.DirFS(res.Dir))
	if err != nil {
		return step.Failed(rukpakv1alpha1.TypeUnpacked, rukpakv1alpha1.ReasonUnpackFailed,
			fmt.Errorf("hashing the unpacked content in %s: %w", res.Dir, err))
	}
	return nil
}

func (r *BundleDeploymentReconciler) classes() []rukpakv1alpha1.ProvisionerClassName {
	var out []rukpakv1alpha1.ProvisionerClassName
	for _, c := range []rukpakv1alpha1.ProvisionerClassName{rukpakv1alpha1.ProvisionerPlain, rukpakv1alpha1.ProvisionerRegistry,
		rukpakv1alpha1.ProvisionerHelm, rukpakv1alpha1.ProvisionerKustomize} {
		if r.Renderers[c] != nil {
			out = append(out, c)
		}
	}
	return out
}
