// Package platformcerts keeps OLM v1's own certificates fresh in the chart's selfSigned TLS mode: the
// CA the chart generated at install time (Secret olmv1-ca), the components' serving certificates
// (Secrets <component>-tls) and the caBundle of the APIServices that trust them.
//
// The Rotator is a manager Runnable (leader only). Each pass it:
//   - replaces the CA when it is missing, invalid or has less than a third of its validity left
//     (pki.NeedsRenewal, shared with the bundle-webhook CA); the replaced CA stays in the trust
//     bundle (ca.crt of every Secret, caBundle of every APIService) until it expires (pki.KeepReplacedCA,
//     the rule of the bundle-webhook CA too), so clients trusting
//     either CA keep working while the kubelet refreshes mounted Secrets;
//   - patches the caBundle of every named APIService whose certificates differ from the trust bundle
//     (before touching serving certificates, so the new CA is trusted before anything serves with it);
//   - re-issues a serving certificate when it is missing, invalid, not signed by the current CA, not
//     valid for its DNS names, or has less than a third of its validity left.
//
// It then sleeps until the next of those thresholds (at most Recheck), or until one of its Secrets
// changes (it watches them by name). It never deletes a Secret.
package platformcerts

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/olmv1/olmv1/platform/conditionevents"
	"github.com/olmv1/olmv1/platform/pki"
)

const (
	// Recheck bounds how long the Rotator sleeps: it re-reads everything at least this often, so that
	// it follows changes made by someone else (a helm upgrade, a person). It is the shared rotator
	// shape (pki.RotationRecheck), as the bundle-webhook CA's.
	Recheck = pki.RotationRecheck
	// Retry is the wait after a pass that failed (pki.RotationRetry).
	Retry = pki.RotationRetry
	// DefaultValidity of the certificates the Rotator issues (the chart's default validityDays).
	DefaultValidity = 365 * 24 * time.Hour

	// CACommonName is the subject of the CA (the chart's genCA uses the same).
	CACommonName = "olmv1-ca"
	// CABundleKey holds the trust bundle (current CA first, then replaced CAs until they expire) in the
	// CA Secret and in every serving Secret.
	CABundleKey = "ca.crt"

	// backdate is subtracted from "now" for NotBefore, tolerating clock skew between nodes.
	backdate = pki.Backdate
)

// APIServiceGVR is the resource of the APIServices whose caBundle the Rotator injects.
var APIServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// SecretRef names a Secret.
type SecretRef struct {
	Namespace, Name string
}

func (s SecretRef) String() string { return s.Namespace + "/" + s.Name }

// ServingSecret is a Secret holding a serving certificate valid for DNSNames.
type ServingSecret struct {
	SecretRef
	DNSNames []string
}

// Config says what the Rotator manages.
type Config struct {
	CASecret    SecretRef
	Serving     []ServingSecret
	APIServices []string
	// Validity of the CA and serving certificates issued (a serving certificate never outlives its CA).
	Validity time.Duration
}

// Clock is the Rotator's time source (a fake in tests).
type Clock = pki.Clock

// Rotator renews the platform certificates; see the package documentation.
type Rotator struct {
	Config
	Client   kubernetes.Interface
	Dynamic  dynamic.Interface
	Recorder conditionevents.Recorder
	Log      logr.Logger
	Clock    Clock
	// WatchSecrets makes Start watch the named Secrets (by name) and make a pass as soon as one changes
	// (e.g. someone replaced or deleted it), instead of at the next due time.
	WatchSecrets bool
	// Triggers, when WatchSecrets is false, makes Start run a pass on each receive (tests).
	Triggers <-chan struct{}
}

// New returns a Rotator with the real clock; set Recorder and Log as needed.
func New(cfg Config, cs kubernetes.Interface, dyn dynamic.Interface) *Rotator {
	if cfg.Validity <= 0 {
		cfg.Validity = DefaultValidity
	}
	return &Rotator{Config: cfg, Client: cs, Dynamic: dyn, Log: logr.Discard(), Clock: pki.RealClock, WatchSecrets: true}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the leader rotates.
func (*Rotator) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable: a pass now, then one whenever something becomes due.
func (r *Rotator) Start(ctx context.Context) error {
	r.Log.Info("managing platform certificates", "ca", r.CASecret.String(), "serving", len(r.Serving), "apiServices", r.APIServices)
	triggers := r.Triggers
	if r.WatchSecrets {
		triggers = r.watchSecrets(ctx)
	}
	loop := pki.Loop{Clock: r.Clock, Triggers: triggers, OnTrigger: func() { r.Log.V(1).Info("a platform certificate Secret changed") }}
	loop.Run(ctx, time.Time{}, r.pass)
	return nil
}

// pass runs Check and returns when the next one is due: at most Recheck later, and at most Retry
// after a failure.
func (r *Rotator) pass(ctx context.Context) time.Time {
	next, err := r.Check(ctx)
	now := r.Clock.Now()
	next = pki.NextCheck(now, next, Recheck)
	if err != nil {
		r.Log.Error(err, "renewing platform certificates; retrying", "in", Retry)
		if retry := now.Add(Retry); retry.Before(next) {
			next = retry
		}
		return next
	}
	r.Log.V(1).Info("platform certificates up to date", "nextCheck", next.Sub(now))
	return next
}

// watchSecrets watches each named Secret (a field selector on its name, so that list/watch by
// resourceNames is all the RBAC it needs) and signals on the returned channel when one is added,
// changed or deleted. Signals coalesce: a burst of changes (a helm upgrade) makes one or two passes.
func (r *Rotator) watchSecrets(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	notify := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	refs := []SecretRef{r.CASecret}
	for _, s := range r.Serving {
		refs = append(refs, s.SecretRef)
	}
	for _, ref := range refs {
		f := informers.NewSharedInformerFactoryWithOptions(r.Client, 0, informers.WithNamespace(ref.Namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ref.Name).String()
			}))
		if _, err := f.Core().V1().Secrets().Informer().AddEventHandler(handler); err != nil {
			r.Log.Error(err, "watching a platform certificate Secret; relying on the periodic check", "secret", ref.String())
			continue
		}
		f.Start(ctx.Done())
	}
	return ch
}

// Check makes one pass and returns when the next one is due (at most Recheck from now). It keeps going
// after a failure, so that one broken Secret does not block the others, and returns every error.
func (r *Rotator) Check(ctx context.Context) (time.Time, error) {
	now := r.Clock.Now()
	next := now.Add(Recheck)
	due := func(t time.Time) {
		if t.Before(next) {
			next = t
		}
	}
	ca, bundle, err := r.ensureCA(ctx, now)
	if err != nil {
		return now.Add(Retry), err
	}
	due(pki.RenewAt(ca.Cert))
	for _, c := range bundle[1:] {
		due(c.NotAfter) // drop a replaced CA once it expired
	}
	bundlePEM := pki.EncodeCerts(bundle)
	var errs []error
	for _, name := range r.APIServices {
		if err := r.injectCABundle(ctx, name, bundle, bundlePEM); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range r.Serving {
		t, err := r.ensureServing(ctx, s, ca, bundle, bundlePEM, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		due(t)
	}
	return next, errors.Join(errs...)
}

// ensureCA returns the current CA and the trust bundle (the CA, then replaced CAs not yet expired),
// replacing the CA and rewriting its Secret as needed.
func (r *Rotator) ensureCA(ctx context.Context, now time.Time) (*pki.CA, []*x509.Certificate, error) {
	ref := r.CASecret
	secrets := r.Client.CoreV1().Secrets(ref.Namespace)
	s, err := secrets.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s, err = nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the CA Secret %s: %w", ref, err)
	}
	var (
		current  *pki.CA
		previous []*x509.Certificate
		reason   string
	)
	if s == nil {
		reason = "missing"
	} else {
		if current, err = pki.ParseCA(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err != nil {
			reason = "invalid " + err.Error() // e.g. "invalid CA key: …"
		} else if pki.NeedsRenewal(current.Cert, now) {
			reason = fmt.Sprintf("less than a third of its validity left (notAfter %s)", current.Cert.NotAfter.UTC().Format(time.RFC3339))
		}
		for _, c := range pki.ParseCerts(s.Data[CABundleKey]) {
			if c.IsCA && pki.KeepReplacedCA(c, now) && (current == nil || !c.Equal(current.Cert)) && !containsCert(previous, c) {
				previous = append(previous, c)
			}
		}
	}
	if reason != "" {
		if current != nil && pki.KeepReplacedCA(current.Cert, now) && !containsCert(previous, current.Cert) {
			previous = append([]*x509.Certificate{current.Cert}, previous...)
		}
		certPEM, keyPEM, err := pki.GenerateCA(CACommonName, now.Add(-backdate), r.Validity)
		if err != nil {
			return nil, nil, err
		}
		if current, err = pki.ParseCA(certPEM, keyPEM); err != nil {
			return nil, nil, err
		}
	}
	bundle := append([]*x509.Certificate{current.Cert}, previous...)
	if reason == "" && s != nil && sameCerts(pki.ParseCerts(s.Data[CABundleKey]), bundle) {
		return current, bundle, nil
	}
	data := map[string][]byte{corev1.TLSCertKey: pki.EncodeCert(current.Cert), CABundleKey: pki.EncodeCerts(bundle)}
	if reason != "" {
		if data[corev1.TLSPrivateKeyKey], err = pki.EncodePKCS8Key(current.Key); err != nil {
			return nil, nil, err
		}
	}
	what := "trust bundle updated (replaced CAs that expired dropped)"
	if reason != "" {
		what = "CA replaced: " + reason
	}
	s, err = r.writeSecret(ctx, ref, s, corev1.SecretTypeOpaque, data)
	if err != nil {
		return nil, nil, fmt.Errorf("writing the CA Secret %s: %w", ref, err)
	}
	r.Log.Info("platform CA Secret written", "secret", ref.String(), "change", what, "notAfter", current.Cert.NotAfter, "trusted", len(bundle))
	r.event(s, "PlatformCAUpdated", "Rotate", fmt.Sprintf("%s; it is valid until %s, %d CA(s) trusted", what, current.Cert.NotAfter.UTC().Format(time.RFC3339), len(bundle)))
	return current, bundle, nil
}

// ensureServing renews the serving Secret when needed and returns when it is due next.
func (r *Rotator) ensureServing(ctx context.Context, ss ServingSecret, ca *pki.CA, bundle []*x509.Certificate, bundlePEM []byte, now time.Time) (time.Time, error) {
	secrets := r.Client.CoreV1().Secrets(ss.Namespace)
	s, err := secrets.Get(ctx, ss.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s, err = nil, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the serving Secret %s: %w", ss.SecretRef, err)
	}
	var leaf *x509.Certificate
	reason := "missing"
	if s != nil {
		leaf, reason = servingProblem(s, ss.DNSNames, ca, now)
	}
	if reason == "" {
		if !sameCerts(pki.ParseCerts(s.Data[CABundleKey]), bundle) {
			if s, err = r.writeSecret(ctx, ss.SecretRef, s, corev1.SecretTypeTLS, map[string][]byte{CABundleKey: bundlePEM}); err != nil {
				return time.Time{}, fmt.Errorf("updating ca.crt of %s: %w", ss.SecretRef, err)
			}
			r.Log.Info("serving Secret's ca.crt updated", "secret", ss.SecretRef.String(), "trusted", len(bundle))
		}
		return pki.RenewAt(leaf), nil
	}
	certPEM, keyPEM, leaf, err := issueServing(ca, ss.DNSNames, now, r.Validity)
	if err != nil {
		return time.Time{}, fmt.Errorf("issuing a serving certificate for %s: %w", ss.SecretRef, err)
	}
	s, err = r.writeSecret(ctx, ss.SecretRef, s, corev1.SecretTypeTLS,
		map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, CABundleKey: bundlePEM})
	if err != nil {
		return time.Time{}, fmt.Errorf("writing the serving Secret %s: %w", ss.SecretRef, err)
	}
	r.Log.Info("serving certificate renewed", "secret", ss.SecretRef.String(), "reason", reason, "notAfter", leaf.NotAfter)
	r.event(s, "ServingCertificateRenewed", "Renew", fmt.Sprintf("serving certificate renewed (%s); valid until %s", reason, leaf.NotAfter.UTC().Format(time.RFC3339)))
	return pki.RenewAt(leaf), nil
}

// servingProblem returns the Secret's certificate and why it must be renewed ("" when it is fine).
func servingProblem(s *corev1.Secret, dnsNames []string, ca *pki.CA, now time.Time) (*x509.Certificate, string) {
	pair, err := pki.ParseKeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, err.Error()
	}
	leaf := pair.Cert
	if err := leaf.CheckSignatureFrom(ca.Cert); err != nil {
		return leaf, "not signed by the current CA"
	}
	for _, n := range dnsNames {
		if leaf.VerifyHostname(n) != nil {
			return leaf, "not valid for " + n
		}
	}
	if now.Before(leaf.NotBefore) {
		return leaf, "not valid yet"
	}
	if pki.NeedsRenewal(leaf, now) {
		return leaf, fmt.Sprintf("less than a third of its validity left (notAfter %s)", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return leaf, ""
}

// issueServing signs a new P-256 serving certificate for dnsNames, valid for validity but not beyond
// the CA; the key is PKCS#8.
func issueServing(ca *pki.CA, dnsNames []string, now time.Time, validity time.Duration) (certPEM, keyPEM []byte, leaf *x509.Certificate, err error) {
	notAfter := now.Add(validity)
	if ca.Cert.NotAfter.Before(notAfter) {
		notAfter = ca.Cert.NotAfter
	}
	pair, err := pki.Issue(pki.ServingRequest(dnsNames, now.Add(-backdate), notAfter), &ca.KeyPair)
	if err != nil {
		return nil, nil, nil, err
	}
	if keyPEM, err = pki.EncodePKCS8Key(pair.Key); err != nil {
		return nil, nil, nil, err
	}
	return pki.EncodeCert(pair.Cert), keyPEM, pair.Cert, nil
}

// writeSecret sets data in the Secret (creating it when s is nil), keeping its other keys, labels and
// annotations. Updates carry s's resourceVersion: a concurrent writer (helm upgrade) makes it fail with
// a conflict, and the next pass starts over from what it wrote.
func (r *Rotator) writeSecret(ctx context.Context, ref SecretRef, s *corev1.Secret, typ corev1.SecretType, data map[string][]byte) (*corev1.Secret, error) {
	secrets := r.Client.CoreV1().Secrets(ref.Namespace)
	if s == nil {
		return secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "rukpak", "app.kubernetes.io/part-of": "olmv1"}},
			Type: typ,
			Data: data,
		}, metav1.CreateOptions{})
	}
	s = s.DeepCopy()
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range data {
		s.Data[k] = v
	}
	return secrets.Update(ctx, s, metav1.UpdateOptions{})
}

// injectCABundle patches the APIService's caBundle when its certificates differ from bundle.
func (r *Rotator) injectCABundle(ctx context.Context, name string, bundle []*x509.Certificate, bundlePEM []byte) error {
	res := r.Dynamic.Resource(APIServiceGVR)
	as, err := res.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		r.Log.Info("APIService not found; its caBundle is injected once it exists", "apiService", name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading APIService %s: %w", name, err)
	}
	cur, _, _ := unstructured.NestedString(as.Object, "spec", "caBundle")
	if pemBytes, err := base64.StdEncoding.DecodeString(cur); err == nil && sameCerts(pki.ParseCerts(pemBytes), bundle) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"caBundle": bundlePEM}}) // []byte marshals as base64
	if err != nil {
		return err
	}
	as, err = res.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patching the caBundle of APIService %s: %w", name, err)
	}
	r.Log.Info("APIService caBundle injected", "apiService", name, "trusted", len(bundle))
	r.event(as, "CABundleInjected", "Inject", fmt.Sprintf("caBundle set to the platform trust bundle (%d CA(s))", len(bundle)))
	return nil
}

func (r *Rotator) event(obj runtime.Object, reason, action, msg string) {
	if obj != nil {
		conditionevents.Normal(r.Recorder, obj, reason, action, msg)
	}
}

// sameCerts compares two bundles as ordered lists of certificates (PEM formatting aside).
func sameCerts(a, b []*x509.Certificate) bool {
	return slices.EqualFunc(a, b, func(x, y *x509.Certificate) bool { return x.Equal(y) })
}

func containsCert(cs []*x509.Certificate, c *x509.Certificate) bool {
	return slices.ContainsFunc(cs, c.Equal)
}
