package certs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/olmv1/olmv1/platform/conditionevents"
	"github.com/olmv1/olmv1/platform/pki"
)

const (
	// WebhookCASecretName holds the self-signed webhook CA in rukpak's namespace: tls.crt/tls.key, and
	// during a rotation the replaced CA as previous.crt/previous.key.
	WebhookCASecretName = "rukpak-webhook-ca"
	// WebhookCAValidity is the validity of the webhook CAs rukpak creates.
	WebhookCAValidity = 365 * 24 * time.Hour

	previousCert = "previous.crt"
	previousKey  = "previous.key"
	// caRecheck bounds how long the rotator sleeps: it re-reads the CA Secret at least this often, so
	// that a replica follows a rotation another replica (or a person) made (the shared rotator shape,
	// as platformcerts.Recheck).
	caRecheck = pki.RotationRecheck
	// caRetry is the wait after a failed rotation (as platformcerts.Retry).
	caRetry = pki.RotationRetry
	// caWriteAttempts bounds how often loadOrRotateCA reads again after losing a race with another
	// replica (AlreadyExists on create, Conflict on update).
	caWriteAttempts = 3
)

// CARotator keeps the self-signed webhook CA in its Secret and the SelfSigned provider signing with
// it. Load makes the first pass at start-up; Start (a manager Runnable, so with leader election only
// the leader rotates) sleeps until the CA needs rotation (a third of its validity left, at most
// caRecheck), rotates it in its Secret, hands it to the provider and calls OnRotate.
//
// A Secret that does not hold a valid CA is never replaced (bundles' webhooks trust it, and a person
// may have put it there): it is reported once per version (an error line and a Warning Event), and
// the provider refuses to issue certificates, saying why, until the Secret is fixed or deleted.
type CARotator struct {
	secrets  typedcorev1.SecretInterface
	provider *SelfSigned
	validity time.Duration

	// OnRotate is called after the signing CA changed (here or elsewhere), e.g. to re-render every
	// BundleDeployment so that their Secrets and caBundles follow the new CA.
	OnRotate func(context.Context) error
	// Recorder and Log report a corrupt CA Secret.
	Recorder conditionevents.Recorder
	Log      logr.Logger
	Clock    pki.Clock

	mu       sync.Mutex
	reported string // resourceVersion of the corrupt Secret last reported
}

// NewCARotator returns the rotator of the CA Secret WebhookCASecretName in secrets' namespace, issuing
// CAs valid for validity, with a provider that has no CA until Load.
func NewCARotator(secrets typedcorev1.SecretInterface, validity time.Duration) *CARotator {
	return &CARotator{secrets: secrets, provider: NewSelfSigned(nil), validity: validity, Log: logr.Discard(), Clock: pki.RealClock}
}

// Provider is the self-signed provider the rotator keeps signing with the current CA.
func (r *CARotator) Provider() *SelfSigned { return r.provider }

// Load reads the CA Secret, creating or rotating the CA as needed, and hands the CA to the provider.
// It fails only when the Secret cannot be read or written: with a corrupt Secret rukpak runs on
// (bundles without webhooks install; those with webhooks report the problem until the Secret is
// fixed or deleted, which a later pass notices).
func (r *CARotator) Load(ctx context.Context) error {
	ca, previous, _, err := loadOrRotateCA(ctx, r.secrets, r.Clock.Now(), r.validity)
	var corrupt *corruptCAError
	switch {
	case errors.As(err, &corrupt):
		r.reportCorrupt(corrupt)
		r.provider.Unavailable(corrupt)
		return nil
	case err != nil:
		return err
	}
	r.provider.Rotate(ca, previous...)
	return nil
}

// Start implements manager.Runnable.
func (r *CARotator) Start(ctx context.Context) error {
	pki.Loop{Clock: r.Clock}.Run(ctx, r.nextCheck(r.Clock.Now()), r.pass)
	return nil
}

// pass runs Check and returns when the next one is due: after a failure, caRetry later and then as
// usual.
func (r *CARotator) pass(ctx context.Context) time.Time {
	if err := r.Check(ctx); err != nil {
		r.Log.Error(err, "rotating the webhook CA; retrying", "in", caRetry)
		return r.nextCheck(r.Clock.Now().Add(caRetry))
	}
	return r.nextCheck(r.Clock.Now())
}

// nextCheck is when, looking from now, the CA needs rotation (at most caRecheck later).
func (r *CARotator) nextCheck(now time.Time) time.Time {
	var due time.Time
	if ca := r.provider.CA(); ca != nil {
		due = pki.RenewAt(ca.Cert)
	}
	return pki.NextCheck(now, due, caRecheck)
}

// Check loads the CA Secret, rotating the CA when it needs it, and when the signing CA changed (here
// or elsewhere) switches the provider to it and calls OnRotate.
func (r *CARotator) Check(ctx context.Context) error {
	ca, previous, rotated, err := loadOrRotateCA(ctx, r.secrets, r.Clock.Now(), r.validity)
	var corrupt *corruptCAError
	if errors.As(err, &corrupt) {
		r.provider.Unavailable(corrupt)
		r.reportCorrupt(corrupt)
		return err
	}
	if err != nil {
		return err
	}
	if !r.provider.Rotate(ca, previous...) {
		return nil
	}
	r.Log.Info("webhook CA changed: re-rendering every BundleDeployment", "rotatedHere", rotated, "notAfter", ca.Cert.NotAfter, "rotateAt", pki.RenewAt(ca.Cert))
	if r.OnRotate != nil {
		return r.OnRotate(ctx)
	}
	return nil
}

// reportCorrupt logs and records an Event on a corrupt CA Secret, once per version of it.
func (r *CARotator) reportCorrupt(e *corruptCAError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reported == e.secret.ResourceVersion {
		return
	}
	r.reported = e.secret.ResourceVersion
	r.Log.Error(e.err, "webhook CA Secret is corrupt; not replacing it", "secret", e.secret.Namespace+"/"+e.secret.Name, "what to do", "fix it, or delete it to have rukpak create a new CA")
	conditionevents.Warning(r.Recorder, e.secret, "CorruptWebhookCA", "LoadCA", e.Error())
}

// corruptCAError is a CA Secret that exists but does not hold a valid CA.
type corruptCAError struct {
	secret *corev1.Secret
	err    error
}

func (e *corruptCAError) Error() string {
	return fmt.Sprintf("the webhook CA Secret %s/%s does not hold a valid CA (%s, %s: %v); rukpak does not replace it on its own: "+
		"fix it, or delete it to have rukpak create a new CA (BundleDeployments with webhooks are then re-rendered)",
		e.secret.Namespace, e.secret.Name, corev1.TLSCertKey, corev1.TLSPrivateKeyKey, e.err)
}

// loadOrRotateCA reads the webhook CA from its Secret, creating it when missing and replacing it
// when it needs rotation; the replaced CA is kept as previous so both stay trusted meanwhile. rotated
// is true when this call created or replaced the CA. It is race-free by construction: several
// replicas may call it at once; a create that finds the Secret already there, or an update whose
// resourceVersion is stale, reads the Secret again and uses what the winner stored. A Secret that
// does not hold a valid CA is a *corruptCAError and is left as it is.
func loadOrRotateCA(ctx context.Context, secrets typedcorev1.SecretInterface, now time.Time, validity time.Duration) (ca *pki.CA, previous []*pki.CA, rotated bool, err error) {
	for attempt := 1; ; attempt++ {
		ca, previous, rotated, err = loadOrRotateCAOnce(ctx, secrets, now, validity)
		if err == nil || attempt == caWriteAttempts || !(apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err)) {
			return ca, previous, rotated, err
		}
	}
}

func loadOrRotateCAOnce(ctx context.Context, secrets typedcorev1.SecretInterface, now time.Time, validity time.Duration) (ca *pki.CA, previous []*pki.CA, rotated bool, err error) {
	s, err := secrets.Get(ctx, WebhookCASecretName, metav1.GetOptions{})
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, nil, false, fmt.Errorf("reading the webhook CA Secret %s: %w", WebhookCASecretName, err)
	}
	var current *pki.CA
	if found {
		var perr error
		if current, perr = pki.ParseCA(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); perr != nil {
			return nil, nil, false, &corruptCAError{secret: s, err: perr}
		}
		if !pki.NeedsRenewal(current.Cert, now) {
			if p, err := pki.ParseCA(s.Data[previousCert], s.Data[previousKey]); err == nil && pki.KeepReplacedCA(p.Cert, now) {
				previous = append(previous, p)
			}
			return current, previous, false, nil
		}
	}
	certPEM, keyPEM, err := pki.GenerateCA("rukpak-webhook-ca", now.Add(-pki.Backdate), validity)
	if err != nil {
		return nil, nil, false, err
	}
	data := map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}
	if current != nil && pki.KeepReplacedCA(current.Cert, now) {
		data[previousCert], data[previousKey] = s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
		previous = append(previous, current)
	}
	if found {
		s.Data = data
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{}) // a stale resourceVersion: another replica rotated
	} else {
		_, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: WebhookCASecretName},
			Type:       corev1.SecretTypeOpaque,
			Data:       data,
		}, metav1.CreateOptions{})
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("storing the webhook CA in Secret %s: %w", WebhookCASecretName, err)
	}
	ca, err = pki.ParseCA(certPEM, keyPEM)
	return ca, previous, true, err
}
