package source

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/signature"
)

// Signature verification of Image sources (spec.source.image.verify, and the cluster-wide
// default of --require-image-signatures).
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

// RequireSignaturesFlag is the flag of catalogd and rukpak that sets Config.RequireSignaturesSecret.
const RequireSignaturesFlag = "require-image-signatures"

// BindRequireSignatures binds --require-image-signatures to secret.
func BindRequireSignatures(fs *flag.FlagSet, secret *string) {
	fs.StringVar(secret, RequireSignaturesFlag, "",
		"cluster-wide default signature policy: name of a Secret in --namespace holding PEM public keys (cosign.pub); "+
			"every image source must then be signed by one of them (also those with their own spec.source.image.verify, which is checked as well), "+
			"and Git, HTTP and ConfigMaps sources are refused (docs/signatures.md); empty: only sources with verify are checked")
}

// The cluster-wide default (Config.RequireSignaturesSecret) adds to a source's own policy, never
// replaces it: an image source without verify must be signed by a key of the default Secret; one
// with its own verify must satisfy its own policy AND the default (checked once when both name the
// same Secret), so that naming another Secret cannot weaken the default. Sources that cannot carry
// a signature are refused.

// imagePolicy is a signature policy and what to check when an image does not satisfy it.
type imagePolicy struct {
	*signature.Policy
	// check names the setting the policy comes from, for messages.
	check string
}

// imagePolicies reads the policies an image must satisfy: spec.verify's, then the cluster-wide
// default's; none when no signature is required.
func (u *DiskUnpacker) imagePolicies(ctx context.Context, spec rukpakv1alpha1.ImageSource, opts Options) ([]imagePolicy, error) {
	var out []imagePolicy
	own := ""
	if v := spec.Verify; v != nil {
		if v.Provider != rukpakv1alpha1.VerificationProviderCosign || v.Cosign == nil || (v.Cosign.SecretRef == nil) == (v.Cosign.Keyless == nil) {
			return nil, newError(KindInvalidSource, nil, "image %q: %s: only provider Cosign with exactly one of cosign.secretRef and cosign.keyless is supported", spec.Ref, verifyField)
		}
		var (
			p   *signature.Policy
			err error
		)
		if k := v.Cosign.Keyless; k != nil {
			p, err = u.keylessPolicy(ctx, spec.Ref, opts.Namespace, *k)
		} else {
			own = v.Cosign.SecretRef.Name
			p, err = u.secretPolicy(ctx, opts.Namespace, own, verifyField+".cosign.secretRef")
		}
		if err != nil {
			return nil, err
		}
		out = append(out, imagePolicy{Policy: p, check: verifyField})
	}
	if d := u.cfg.RequireSignaturesSecret; d != "" && d != own {
		flagName := "--" + RequireSignaturesFlag
		p, err := u.secretPolicy(ctx, opts.Namespace, d, flagName)
		if err != nil {
			return nil, err
		}
		p.Name = fmt.Sprintf("Secret %q (the cluster-wide default, %s=%s)", d, flagName, d)
		out = append(out, imagePolicy{Policy: p, check: "the Secret " + d + " of " + flagName})
	}
	return out, nil
}

// secretPolicy reads the public keys of Secret secretName, named by field.
func (u *DiskUnpacker) secretPolicy(ctx context.Context, namespace, secretName, field string) (*signature.Policy, error) {
	s, err := u.getSecret(ctx, namespace, secretName, field)
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

// requireImage refuses a source of type t that is not an image when the cluster-wide default
// requires signatures: nothing can verify a git commit, an HTTP download or ConfigMaps. Not retried:
// only a change of the source (to a signed image) or of the flag helps.
func (u *DiskUnpacker) requireImage(t rukpakv1alpha1.SourceType, opts Options) error {
	d := u.cfg.RequireSignaturesSecret
	if d == "" {
		return nil
	}
	switch t {
	case rukpakv1alpha1.SourceTypeGit, rukpakv1alpha1.SourceTypeHTTP, rukpakv1alpha1.SourceTypeConfigMaps:
	default:
		return nil
	}
	e := newError(KindUnsigned, nil, "the cluster requires signed images (--%s=%s): %s sources cannot be verified; "+
		"use an Image source signed with a key of Secret %q in namespace %q (docs/signatures.md)", RequireSignaturesFlag, d, t, d, opts.Namespace)
	e.Reason = ReasonUnsigned
	e.Retryable = false
	return e
}

// verify checks the signature of digest (at this endpoint) under one policy. previous, the resolved
// source of the last unpack, keeps the verification time when the same digest was verified with
// the same key before, so that status does not change on every poll.
func (s *imageSource) verify(ctx context.Context, digest name.Digest, policy imagePolicy, previous *rukpakv1alpha1.ResolvedSource) (*rukpakv1alpha1.VerifiedSignature, error) {
	v, err := signature.Verify(ctx, digest, *policy.Policy, s.opts...)
	if err != nil {
		var verr *signature.VerifyError
		if errors.As(err, &verr) {
			kind := KindSignatureInvalid
			if verr.Reason == signature.ReasonUnsigned {
				kind = KindUnsigned
			}
			e := newError(kind, err, "%s: %v (check %s and the image's signatures)", s.what, err, policy.check)
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
	if v.Subject != "" {
		it := metav1.NewTime(v.IntegratedTime)
		out.Identity = &rukpakv1alpha1.SignerIdentity{Issuer: v.Issuer, Subject: v.Subject, IntegratedTime: &it}
	}
	if p := previous; p != nil && p.Image != nil && p.Image.Verified != nil && sameSigner(p.Image.Verified, out) &&
		digestOf(p.Image.Ref) == digest.DigestStr() {
		out.Time = p.Image.Verified.Time
	}
	return out, nil
}

// sameSigner is the same key, or the same identity, in two verified signatures.
func sameSigner(a, b *rukpakv1alpha1.VerifiedSignature) bool {
	if a.KeyFingerprint != b.KeyFingerprint || (a.Identity == nil) != (b.Identity == nil) {
		return false
	}
	return a.Identity == nil || (a.Identity.Issuer == b.Identity.Issuer && a.Identity.Subject == b.Identity.Subject)
}

// digestOf is the digest of a digest reference ("" for anything else).
func digestOf(ref string) string {
	d, err := name.NewDigest(ref)
	if err != nil {
		return ""
	}
	return d.DigestStr()
}
