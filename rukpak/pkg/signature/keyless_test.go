package signature_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/olmv1/olmv1/rukpak/pkg/signature"
	"github.com/olmv1/olmv1/rukpak/pkg/signature/signaturetest"
)

const (
	testIssuer  = "https://issuer.example.com"
	testSubject = "https://github.com/org/repo/.github/workflows/release.yaml@refs/heads/main"
)

var testIdentity = signaturetest.Identity{Issuer: testIssuer, Subject: testSubject}

// keylessFixture is a registry, a test authority and a keyless policy trusting it.
type keylessFixture struct {
	host string
	ca   *signaturetest.Authority
}

func newKeylessFixture(t testing.TB) *keylessFixture {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ca, err := signaturetest.NewAuthority("test")
	if err != nil {
		t.Fatal(err)
	}
	return &keylessFixture{host: strings.TrimPrefix(srv.URL, "http://"), ca: ca}
}

func (f *keylessFixture) push(t testing.TB, repoTag string) name.Digest {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(f.host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return tag.Context().Digest(d.String())
}

func rootOf(t testing.TB, ca *signaturetest.Authority) *signature.TrustedRoot {
	t.Helper()
	data, err := ca.TrustedRootJSON()
	if err != nil {
		t.Fatal(err)
	}
	root, err := signature.ParseTrustedRoot(data, `ConfigMap "root"`)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func (f *keylessFixture) policy(t testing.TB, issuer, subject, subjectRegExp string) signature.Policy {
	t.Helper()
	k := &signature.KeylessPolicy{Issuer: issuer, Subject: subject, Root: rootOf(t, f.ca)}
	if subjectRegExp != "" {
		re, err := signature.CompileSubjectRegExp(subjectRegExp)
		if err != nil {
			t.Fatal(err)
		}
		k.SubjectRegExp = re
	}
	return signature.Policy{Name: `ConfigMap "root"`, Keyless: k}
}

func (f *keylessFixture) signer(t testing.TB, id signaturetest.Identity) signature.KeylessSigner {
	t.Helper()
	s, err := f.ca.Signer(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func signKeyless(t testing.TB, digest name.Digest, s signature.KeylessSigner) {
	t.Helper()
	if _, err := signature.SignKeyless(context.Background(), digest, s); err != nil {
		t.Fatal(err)
	}
}

// pushLayer pushes a signature image of digest with one layer, in place of the one there.
func pushLayer(t testing.TB, digest name.Digest, payload []byte, annotations map[string]string) {
	t.Helper()
	if err := signaturetest.ReplaceSignature(digest, payload, annotations); err != nil {
		t.Fatal(err)
	}
}

func wantRefused(t *testing.T, err error, reason string, contains ...string) {
	t.Helper()
	var verr *signature.VerifyError
	if !errors.As(err, &verr) {
		t.Fatalf("want a VerifyError (%s), got %v", reason, err)
	}
	if verr.Reason != reason {
		t.Errorf("reason %s, want %s: %v", verr.Reason, reason, err)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("message does not say %q: %v", c, err)
		}
	}
}

func TestKeylessSignedAccepted(t *testing.T) {
	f := newKeylessFixture(t)
	digest := f.push(t, "catalog:v1")
	s := f.signer(t, testIdentity)
	signKeyless(t, digest, s)
	for name, p := range map[string]signature.Policy{
		"subject":       f.policy(t, testIssuer, testSubject, ""),
		"subjectRegExp": f.policy(t, testIssuer, "", `https://github\.com/org/.*@refs/heads/main`),
	} {
		t.Run(name, func(t *testing.T) {
			v, err := signature.Verify(context.Background(), digest, p)
			if err != nil {
				t.Fatal(err)
			}
			if v.Issuer != testIssuer || v.Subject != testSubject || !v.IntegratedTime.Equal(s.IntegratedTime) || v.KeyFingerprint != "" || v.Signature == "" {
				t.Errorf("verified %+v, want the identity and integrated time %s", v, s.IntegratedTime)
			}
		})
	}
}

func TestKeylessLegacyIssuerExtension(t *testing.T) {
	f := newKeylessFixture(t)
	digest := f.push(t, "catalog:v1")
	signKeyless(t, digest, f.signer(t, signaturetest.Identity{Issuer: testIssuer, Legacy: true, Subject: "release@example.com"}))
	v, err := signature.Verify(context.Background(), digest, f.policy(t, testIssuer, "release@example.com", ""))
	if err != nil {
		t.Fatal(err)
	}
	if v.Subject != "release@example.com" {
		t.Errorf("subject %q", v.Subject)
	}
}

func TestKeylessRefused(t *testing.T) {
	ctx := context.Background()
	f := newKeylessFixture(t)
	other, err := signaturetest.NewAuthority("other")
	if err != nil {
		t.Fatal(err)
	}
	good := f.policy(t, testIssuer, testSubject, "")
	for _, tc := range []struct {
		name string
		// sign signs digest (other is another image of the repository).
		sign     func(t *testing.T, digest, other name.Digest)
		policy   signature.Policy
		reason   string
		contains []string
	}{{
		name:   "unsigned",
		sign:   func(*testing.T, name.Digest, name.Digest) {},
		policy: good, reason: signature.ReasonUnsigned, contains: []string{"no signature found"},
	}, {
		name: "another subject",
		sign: func(t *testing.T, d, _ name.Digest) {
			signKeyless(t, d, f.signer(t, signaturetest.Identity{Issuer: testIssuer, Subject: "mallory@example.com"}))
		},
		policy: good, reason: signature.ReasonSignatureInvalid, contains: []string{`issued to "mallory@example.com"`, "keyless.subject"},
	}, {
		name:   "a regexp matching only part of the subject",
		sign:   func(t *testing.T, d, _ name.Digest) { signKeyless(t, d, f.signer(t, testIdentity)) },
		policy: f.policy(t, testIssuer, "", `https://github\.com/org/repo`), reason: signature.ReasonSignatureInvalid, contains: []string{"not a match of"},
	}, {
		name: "another issuer",
		sign: func(t *testing.T, d, _ name.Digest) {
			signKeyless(t, d, f.signer(t, signaturetest.Identity{Issuer: "https://evil.example.com", Subject: testSubject}))
		},
		policy: good, reason: signature.ReasonSignatureInvalid, contains: []string{`OIDC issuer "https://evil.example.com"`, "keyless.issuer"},
	}, {
		name: "no issuer extension",
		sign: func(t *testing.T, d, _ name.Digest) {
			signKeyless(t, d, f.signer(t, signaturetest.Identity{Subject: testSubject}))
		},
		policy: good, reason: signature.ReasonSignatureInvalid, contains: []string{"names no OIDC issuer"},
	}, {
		name: "a certificate of another CA",
		sign: func(t *testing.T, d, _ name.Digest) {
			s, err := other.Signer(testIdentity)
			if err != nil {
				t.Fatal(err)
			}
			s.LogKey = f.ca.LogKey // logged in the trusted log, issued by an untrusted CA
			signKeyless(t, d, s)
		},
		policy: good, reason: signature.ReasonSignatureInvalid, contains: []string{"does not chain to a CA of the trusted root", "trustedRootRef"},
	}, {
		name: "logged in a log not in the trusted root",
		sign: func(t *testing.T, d, _ name.Digest) {
			s := f.signer(t, testIdentity)
			s.LogKey = other.LogKey
			signKeyless(t, d, s)
		},
		policy: good, reason: signature.ReasonSignatureInvalid, contains: []string{"not in the trusted root"},
	}, {
		name: "a signed entry timestamp of another key claiming the trusted log",
		sign: func(t *testing.T, d, _ name.Digest) {
			s := f.signer(t, testIdentity)
			payload, ann := annotations(t, d, s)
			forged := annotationsOf(t, payload, signerWithLog(s, other))
			var b, fb signature.RekorBundle
			mustUnmarshal(t, ann[signature.AnnotationBundle], &b)
			mustUnmarshal(t, forged[signature.AnnotationBundle], &fb)
			b.SignedEntryTimestamp = fb.SignedEntryTimestamp
			ann[signature.AnnotationBundle] = mustMarshal(t, b)
			pushLayer(t, d, payload, ann)
		},
		policy: good, reason: signature.ReasonSignatureInvalid, contains: []string{"signed entry timestamp does not verify"},
	}, {
		name: "an entry whose integrated time was changed after signing",
		sign: func(t *testing.T, d, _ name.Digest) {
			payload, ann := annotations(t, d, f.signer(t, testIdentity))
			var b signature.RekorBundle
			mustUnmarshal(t, ann[signature.AnnotationBundle], &b)
			b.Payload.IntegratedTime -= 60
			ann[signature.AnnotationBundle] = mustMarshal(t, b)
			pushLayer(t, d, payload, ann)
		},
		policy: good, reason: signature.ReasonSignatureInvalid, contains: []string{"signed entry timestamp does not verify"},
	}, {
		name: "a certificate expired at the integrated time",
		sign: func(t *testing.T, d, _ name.Digest) {
			s := f.signer(t, testIdentity)
			s.IntegratedTime = s.Cert.NotAfter.Add(time.Minute)
			signKeyless(t, d, s)
		},
		policy: good, reason: signature.ReasonSignatureInvalid, contains: []string{"does not chain", "expired"},
	}, {
		name: "no transparency log bundle",
		sign: func(t *testing.T, d, _ name.Digest) {
			payload, ann := annotations(t, d, f.signer(t, testIdentity))
			delete(ann, signature.AnnotationBundle)
			pushLayer(t, d, payload, ann)
		},
		policy: good, reason: signature.ReasonSignatureInvalid, contains: []string{"no dev.sigstore.cosign/bundle annotation"},
	}, {
		name: "the bundle of another signature",
		sign: func(t *testing.T, d, o name.Digest) {
			s := f.signer(t, testIdentity)
			payload, ann := annotations(t, d, s)
			_, otherAnn := annotations(t, o, s)
			ann[signature.AnnotationBundle] = otherAnn[signature.AnnotationBundle]
			pushLayer(t, d, payload, ann)
		},
		policy: good, reason: signature.ReasonSignatureInvalid, contains: []string{"for another payload"},
	}, {
		name: "a signature of another digest",
		sign: func(t *testing.T, d, o name.Digest) {
			payload, ann := annotations(t, o, f.signer(t, testIdentity))
			pushLayer(t, d, payload, ann)
		},
		policy: good, reason: signature.ReasonSignatureInvalid, contains: []string{"a signature copied from another image"},
	}, {
		name: "a tampered signature",
		sign: func(t *testing.T, d, _ name.Digest) {
			payload, ann := annotations(t, d, f.signer(t, testIdentity))
			_, otherAnn := annotations(t, d, f.signer(t, testIdentity))
			ann[signature.AnnotationSignature] = otherAnn[signature.AnnotationSignature]
			pushLayer(t, d, payload, ann)
		},
		policy: good, reason: signature.ReasonSignatureInvalid, contains: []string{"does not verify with its certificate's key"},
	}, {
		name: "signed with a key",
		sign: func(t *testing.T, d, _ name.Digest) {
			s := f.signer(t, testIdentity)
			if _, err := signature.Sign(ctx, d, s.Key); err != nil {
				t.Fatal(err)
			}
		},
		policy: good, reason: signature.ReasonSignatureInvalid, contains: []string{"signed with a key, not keyless"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			repo := strings.ReplaceAll(strings.ToLower(tc.name), " ", "-")
			digest := f.push(t, repo+":v1")
			otherDigest := f.push(t, repo+":v2")
			tc.sign(t, digest, otherDigest)
			_, err := signature.Verify(ctx, digest, tc.policy)
			wantRefused(t, err, tc.reason, tc.contains...)
		})
	}
}

// TestKeylessEitherLayer: a keyless layer is found among other signatures of the image.
func TestKeylessEitherLayer(t *testing.T) {
	f := newKeylessFixture(t)
	digest := f.push(t, "catalog:v1")
	signKeyless(t, digest, f.signer(t, signaturetest.Identity{Issuer: testIssuer, Subject: "mallory@example.com"}))
	signKeyless(t, digest, f.signer(t, testIdentity))
	if _, err := signature.Verify(context.Background(), digest, f.policy(t, testIssuer, testSubject, "")); err != nil {
		t.Fatal(err)
	}
}

func TestParseTrustedRootRefusesIncomplete(t *testing.T) {
	for name, data := range map[string]string{
		"not JSON":        "nope",
		"no CA":           `{"mediaType":"` + signature.TrustedRootMediaType + `","tlogs":[]}`,
		"other mediaType": `{"mediaType":"application/json"}`,
	} {
		if _, err := signature.ParseTrustedRoot([]byte(data), "x"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ca, err := signaturetest.NewAuthority("t")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := ca.TrustedRootJSON()
	var raw map[string]any
	mustUnmarshal(t, string(data), &raw)
	delete(raw, "tlogs")
	if _, err := signature.ParseTrustedRoot([]byte(mustMarshal(t, raw)), "x"); err == nil || !strings.Contains(err.Error(), "no tlogs") {
		t.Errorf("without tlogs: %v", err)
	}
}

func annotations(t testing.TB, digest name.Digest, s signature.KeylessSigner) ([]byte, map[string]string) {
	t.Helper()
	payload, err := signature.NewPayload(digest)
	if err != nil {
		t.Fatal(err)
	}
	return payload, annotationsOf(t, payload, s)
}

func annotationsOf(t testing.TB, payload []byte, s signature.KeylessSigner) map[string]string {
	t.Helper()
	ann, err := s.Annotations(payload)
	if err != nil {
		t.Fatal(err)
	}
	return ann
}

// signerWithLog is s with the log key of other (a SET made by another log).
func signerWithLog(s signature.KeylessSigner, other *signaturetest.Authority) signature.KeylessSigner {
	s.LogKey = other.LogKey
	return s
}

func mustUnmarshal(t testing.TB, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatal(err)
	}
}

func mustMarshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// BenchmarkVerifyKeyless is Verify of a keyless signature against a local registry: the signature
// manifest and payload fetched, then the signature, the SET and the certificate chain checked.
func BenchmarkVerifyKeyless(b *testing.B) {
	f := newKeylessFixture(b)
	digest := f.push(b, "catalogs/demo:v1")
	signKeyless(b, digest, f.signer(b, testIdentity))
	policy := f.policy(b, testIssuer, testSubject, "")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := signature.Verify(context.Background(), digest, policy); err != nil {
			b.Fatal(err)
		}
	}
}
