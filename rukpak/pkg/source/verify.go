package source

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/signature"
)

// Signature verification of Image sources (spec.source.image.verify).
//
// The digest a reference resolves to is verified before anything is looked up in the cache or
// pulled, and that digest is what is then pulled (by digest, so go-containerregistry checks the
// manifest against it): a tag moved between the check and the pull cannot swap the content.
// Verification is never skipped for a digest reference whose content is cached, since the policy
// may have changed since it was cached.

// Condition reasons of unpack errors caused by the signature policy (Error.Reason).
const (
	ReasonUnsigned         = signature.ReasonUnsigned
	ReasonSignatureInvalid = signature.ReasonSignatureInvalid
)

const verifyField = "spec.source.image.verify"

// imagePolicy reads the keys of spec.verify from its Secret; nil when no signature is required.
func (u *DiskUnpacker) imagePolicy(ctx context.Context, spec rukpakv1alpha1.ImageSource, opts Options) (*signature.Policy, error) {
	v := spec.Verify
	if v == nil {
		return nil, nil
	}
	if v.Provider != rukpakv1alpha1.VerificationProviderCosign || v.Cosign == nil || v.Cosign.SecretRef == nil {
		return nil, newError(KindInvalidSource, nil, "image %q: %s: only provider Cosign with cosign.secretRef is supported (keyless verification is not implemented yet)", spec.Ref, verifyField)
	}
	const field = verifyField + ".cosign.secretRef"
	s, err := u.getSecret(ctx, opts.Namespace, v.Cosign.SecretRef.Name, field)
	if err != nil {
		return nil, err
	}
	policy := &signature.Policy{Name: fmt.Sprintf("Secret %q (%s)", s.Name, field)}
	names := make([]string, 0, len(s.Data))
	for k := range s.Data {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		keys, err := signature.ParsePublicKeys(s.Data[k], fmt.Sprintf("Secret %q key %q", s.Name, k))
		if err != nil {
			return nil, badSecret("%v (%s: every key of the Secret must hold PEM public keys, e.g. cosign.pub)", err, field)
		}
		policy.Keys = append(policy.Keys, keys...)
	}
	if len(policy.Keys) == 0 {
		return nil, badSecret("Secret %q (%s) holds no public key: add one, e.g. `kubectl create secret generic %s --from-file=cosign.pub`", s.Name, field, s.Name)
	}
	return policy, nil
}

// verify checks the signature of digest (at this endpoint) under policy. previous, the resolved
// source of the last unpack, keeps the verification time when the same digest was verified with
// the same key before, so that status does not change on every poll.
func (s *imageSource) verify(ctx context.Context, digest name.Digest, policy *signature.Policy, previous *rukpakv1alpha1.ResolvedSource) (*rukpakv1alpha1.VerifiedSignature, error) {
	v, err := signature.Verify(ctx, digest, *policy, s.opts...)
	if err != nil {
		var verr *signature.VerifyError
		if errors.As(err, &verr) {
			kind := KindSignatureInvalid
			if verr.Reason == signature.ReasonUnsigned {
				kind = KindUnsigned
			}
			e := newError(kind, err, "%s: %v (check %s and the image's signatures)", s.what, err, verifyField)
			e.Reason = verr.Reason
			return nil, e
		}
		return nil, s.classify(ctx, fmt.Errorf("fetching the signature of %s: %w", digest.DigestStr(), err))
	}
	out := &rukpakv1alpha1.VerifiedSignature{
		Provider:       rukpakv1alpha1.VerificationProviderCosign,
		KeyFingerprint: v.KeyFingerprint,
		Signature:      v.Signature,
		Time:           metav1.NewTime(time.Now().UTC().Truncate(time.Second)),
	}
	if p := previous; p != nil && p.Image != nil && p.Image.Verified != nil && p.Image.Verified.KeyFingerprint == out.KeyFingerprint &&
		digestOf(p.Image.Ref) == digest.DigestStr() {
		out.Time = p.Image.Verified.Time
	}
	return out, nil
}

// digestOf is the digest of a digest reference ("" for anything else).
func digestOf(ref string) string {
	d, err := name.NewDigest(ref)
	if err != nil {
		return ""
	}
	return d.DigestStr()
}
