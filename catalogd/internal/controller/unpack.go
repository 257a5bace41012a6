package controller

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/replica"
	"github.com/olmv1/olmv1/catalogd/internal/serve"
	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// The unpack steps of a Catalog that is not paused: unpack → parse → store, one replica.Load
// (the catalog's lock is held from the first step to the last). Each step fails with a step.Error
// on the Unpacked condition, whose Reason is Unpacked's reason (status.go) and which says whether
// retrying helps:
//
//	unpack  fetch spec.source         UnpackFailed (Unsigned, SignatureInvalid: the signature
//	                                  policy); terminal when the source says retrying cannot
//	                                  help, otherwise retried when the server asked (Retry-After)
//	                                  or with backoff
//	parse   read and validate the FBC InvalidCatalog, terminal; UnpackFailed (reading the unpacked
//	                                  content) retried with backoff
//	store   swap the content in       UnpackFailed, retried with backoff
//
// On success the status fields that describe the served content are updated; on failure they are
// left alone, so they keep describing the last good content, which is still served.

// unpackSteps runs the unpack steps for the current generation. It returns what they did (the
// Unpacked message, without the generation) or the step error that stopped them.
func (r *CatalogReconciler) unpackSteps(ctx context.Context, cat *catalogdv1alpha1.Catalog) (string, error) {
	ld := r.Loader.Begin(replica.Request{Catalog: cat.Name, Source: cat.Spec.Source,
		Previous: cat.Status.ResolvedSource, PreviousHash: cat.Status.ContentHash})
	defer ld.End()
	res, err := unpack(ctx, ld)
	if err != nil {
		return "", err
	}
	if res.Unchanged {
		cat.Status.ServedGeneration = cat.Generation
		return fmt.Sprintf("%s is unchanged (%s)", res.Resolved.String(), res.Content.Hash), nil
	}
	if err := parse(ctx, ld, res.Resolved); err != nil {
		return "", err
	}
	return r.store(ctx, ld, cat)
}

// unpack fetches spec.source (or finds it unchanged).
func unpack(ctx context.Context, ld *replica.Load) (*replica.Result, error) {
	res, err := ld.Unpack(ctx)
	if err == nil {
		return res, nil
	}
	// The reason is UnpackFailed, or Unsigned / SignatureInvalid when the signature policy
	// (spec.source.image.verify, --require-image-signatures) refused the image or the source.
	if !source.IsRetryable(err) {
		return nil, step.Terminal(catalogdv1alpha1.TypeUnpacked, source.ReasonOf(err), err)
	}
	return nil, step.Failed(catalogdv1alpha1.TypeUnpacked, source.ReasonOf(err), err).After(source.RetryAfterOf(err))
}

// parse reads and validates the file-based catalog that resolved was unpacked to.
func parse(ctx context.Context, ld *replica.Load, resolved rukpakv1alpha1.ResolvedSource) error {
	err := ld.Parse(ctx)
	if err == nil {
		return nil
	}
	var le *replica.LoadError
	if errors.As(err, &le) && le.Stage == replica.StageInvalid {
		return step.Terminal(catalogdv1alpha1.TypeUnpacked, catalogdv1alpha1.ReasonInvalidCatalog,
			fmt.Errorf("%s is not a valid file-based catalog: %w", resolved.String(), err))
	}
	return step.Failed(catalogdv1alpha1.TypeUnpacked, catalogdv1alpha1.ReasonUnpackFailed, err)
}

// store swaps the parsed content in and describes it in status.
func (r *CatalogReconciler) store(ctx context.Context, ld *replica.Load, cat *catalogdv1alpha1.Catalog) (string, error) {
	res, err := ld.Store()
	if err != nil {
		return "", step.Failed(catalogdv1alpha1.TypeUnpacked, catalogdv1alpha1.ReasonUnpackFailed, err)
	}
	content, rs := res.Content, res.Resolved
	now := metav1.NewTime(r.Now())
	cat.Status.ResolvedSource = &rs
	cat.Status.ContentHash = content.Hash
	cat.Status.LastUnpacked = &now
	cat.Status.ServedGeneration = cat.Generation
	cat.Status.Counts = &catalogdv1alpha1.CatalogCounts{
		Packages: int32(content.Counts.Packages), Channels: int32(content.Counts.Channels), Bundles: int32(content.Counts.Bundles),
	}
	cat.Status.ContentURL = r.ContentBaseURL + serve.URLPath(cat.Name)
	log.FromContext(ctx).Info("unpacked", "hash", content.Hash, "source", rs.String(), "packages", content.Counts.Packages,
		"channels", content.Counts.Channels, "bundles", content.Counts.Bundles, "bytes", content.Size)
	return fmt.Sprintf("unpacked %s (%s)", rs.String(), content.Hash), nil
}

// keepLastGood runs after the current spec failed: when the store does not hold the content the
// status names (this replica was restarted on an empty store, or took over from a leader that
// unpacked it), it loads exactly that content again, so that the last good content stays served.
// A failure is only logged: Serving then says nothing is served.
func (r *CatalogReconciler) keepLastGood(ctx context.Context, cat *catalogdv1alpha1.Catalog) {
	if err := r.loadWhatStatusNames(ctx, cat); err != nil {
		log.FromContext(ctx).Info("the last good content cannot be loaded again either", "hash", cat.Status.ContentHash,
			"source", cat.Status.ResolvedSource.String(), "error", err.Error())
	}
}

// loadWhatStatusNames makes the store hold the content the status names when it does not: it
// loads exactly status.resolvedSource (replica.PinnedSource: the image digest, the git commit) and
// stores it only if its hash is status.contentHash, the way every other replica does. It does
// nothing when the store already holds it or the status names nothing.
func (r *CatalogReconciler) loadWhatStatusNames(ctx context.Context, cat *catalogdv1alpha1.Catalog) error {
	sc, err := replica.WhatStatusNames(cat, r.Loader.Store)
	if err != nil || sc.Load == nil {
		return err
	}
	if _, err := r.Loader.Load(ctx, *sc.Load); err != nil {
		return err
	}
	log.FromContext(ctx).Info("serving the content the status names again", "hash", sc.Load.WantHash, "source", cat.Status.ResolvedSource.String())
	return nil
}
