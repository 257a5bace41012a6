package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/certs"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/registryv1"
)

const (
	// caSecretName holds the self-signed webhook CA in rukpak's namespace: tls.crt/tls.key, and during
	// a rotation the replaced CA as previous.crt/previous.key.
	caSecretName = "rukpak-webhook-ca"
	caValidity   = 365 * 24 * time.Hour
	previousCert = "previous.crt"
	previousKey  = "previous.key"
	// caRecheck bounds how long the rotator sleeps: it re-reads the CA Secret at least this often, so
	// that a replica follows a rotation another replica (or a person) made.
	caRecheck = time.Hour
	// caRetry is the wait after a failed rotation.
	caRetry = time.Minute
)

type webhookFlags struct {
	provider   string
	issuerKind string
	issuerName string

	// rotator keeps the self-signed CA fresh while rukpak runs (nil for the other providers).
	rotator *caRotator
	// recorder and log report a corrupt CA Secret (an Event on the Secret and an error line).
	recorder record.EventRecorder
	log      logr.Logger
	mu       sync.Mutex
	reported string // resourceVersion of the corrupt Secret last reported
}

// reportCorrupt logs and records an Event on a corrupt CA Secret, once per version of it.
func (w *webhookFlags) reportCorrupt(e *corruptCAError) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reported == e.secret.ResourceVersion {
		return
	}
	w.reported = e.secret.ResourceVersion
	w.log.Error(e.err, "webhook CA Secret is corrupt; not replacing it", "secret", e.secret.Namespace+"/"+e.secret.Name, "what to do", "fix it, or delete it to have rukpak create a new CA")
	if w.recorder != nil {
		w.recorder.Event(e.secret, corev1.EventTypeWarning, "CorruptWebhookCA", e.Error())
	}
}

func (w *webhookFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&w.provider, "webhook-cert-provider", certs.SelfSignedName,
		"who issues the serving certificates of registry+v1 bundles' webhooks: "+strings.Join(certs.Names, ", ")+
			" (self-signed: a CA rukpak keeps in the Secret "+caSecretName+" of --namespace, valid for a year and rotated while rukpak runs"+
			" once a third of its validity is left; the replaced CA stays trusted until it expires)")
	fs.StringVar(&w.issuerKind, "cert-manager-issuer-kind", "ClusterIssuer", "cert-manager: kind of the issuer named by --cert-manager-issuer-name (Issuer or ClusterIssuer)")
	fs.StringVar(&w.issuerName, "cert-manager-issuer-name", "", "cert-manager: issuer to sign with (empty: a self-signed Issuer per webhook Service)")
}

// registryRenderer builds the registry+v1 renderer with the selected certificate provider. With the
// self-signed provider it also prepares w.rotator, which startRotation runs.
func (w *webhookFlags) registryRenderer(ctx context.Context, cs kubernetes.Interface, namespace string) (provisioner.Renderer, error) {
	var (
		ca       *certs.CA
		previous []*certs.CA
		issuer   *certs.IssuerRef
		err      error
	)
	secrets := cs.CoreV1().Secrets(namespace)
	var corrupt *corruptCAError
	if w.provider == certs.SelfSignedName {
		ca, previous, _, err = loadOrRotateCA(ctx, secrets, time.Now(), caValidity)
		switch {
		case errors.As(err, &corrupt):
			// rukpak runs on: bundles without webhooks install; those with webhooks report the
			// problem until the Secret is fixed or deleted (the rotator reads it again).
			w.reportCorrupt(corrupt)
		case err != nil:
			return nil, err
		}
	}
	if w.issuerName != "" {
		issuer = &certs.IssuerRef{Kind: w.issuerKind, Name: w.issuerName}
	}
	var p certs.Provider
	if corrupt != nil {
		p = certs.NewSelfSigned(nil) // no CA until the Secret is fixed or deleted
	} else if p, err = certs.NewByName(w.provider, ca, previous, issuer); err != nil {
		return nil, fmt.Errorf("--webhook-cert-provider: %w", err)
	}
	if ss, ok := p.(*certs.SelfSigned); ok {
		if corrupt != nil {
			ss.Unavailable(corrupt)
		}
		w.rotator = newCARotator(secrets, ss, caValidity)
		w.rotator.report = w.reportCorrupt
	}
	return registryv1.New(registryv1.WithCertProvider(p)), nil
}

// startRotation adds the CA rotator to the manager (when there is one); after each rotation
// resync re-renders every BundleDeployment, so their Secrets and caBundles follow the new CA.
func (w *webhookFlags) startRotation(mgr ctrl.Manager, resync func(context.Context) error) error {
	if w.rotator == nil {
		return nil
	}
	w.rotator.onRotate = resync
	w.rotator.log = mgr.GetLogger().WithName("webhook-ca")
	return mgr.Add(w.rotator)
}

// caRotator replaces the self-signed webhook CA while rukpak runs: it sleeps until the CA needs
// rotation (a third of its validity left, at most caRecheck), rotates it in its Secret, hands it to the
// provider and calls onRotate. It is a manager Runnable, so with leader election only the leader
// rotates.
type caRotator struct {
	secrets  typedcorev1.SecretInterface
	provider *certs.SelfSigned
	validity time.Duration
	onRotate func(context.Context) error
	// report is told about a corrupt CA Secret each time check finds it.
	report func(*corruptCAError)
	log    logr.Logger
	// now and after are the clock (time.Now and time.After; fakes in tests).
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
}

func newCARotator(secrets typedcorev1.SecretInterface, provider *certs.SelfSigned, validity time.Duration) *caRotator {
	return &caRotator{secrets: secrets, provider: provider, validity: validity, log: logr.Discard(), now: time.Now, after: time.After}
}

// Start implements manager.Runnable.
func (r *caRotator) Start(ctx context.Context) error {
	for {
		wait := caRecheck
		if ca := r.provider.CA(); ca != nil {
			wait = min(wait, max(0, ca.RotateAt().Sub(r.now())))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.after(wait):
		}
		if err := r.check(ctx); err != nil {
			r.log.Error(err, "rotating the webhook CA; retrying", "in", caRetry)
			select {
			case <-ctx.Done():
				return nil
			case <-r.after(caRetry):
			}
		}
	}
}

// check loads the CA Secret, rotating the CA when it needs it, and when the signing CA changed (here
// or elsewhere) switches the provider to it and calls onRotate.
func (r *caRotator) check(ctx context.Context) error {
	ca, previous, rotated, err := loadOrRotateCA(ctx, r.secrets, r.now(), r.validity)
	var corrupt *corruptCAError
	if errors.As(err, &corrupt) {
		r.provider.Unavailable(corrupt)
		if r.report != nil {
			r.report(corrupt)
		}
		return err
	}
	if err != nil {
		return err
	}
	if !r.provider.Rotate(ca, previous...) {
		return nil
	}
	r.log.Info("webhook CA changed: re-rendering every BundleDeployment", "rotatedHere", rotated, "notAfter", ca.Cert.NotAfter, "rotateAt", ca.RotateAt())
	if r.onRotate != nil {
		return r.onRotate(ctx)
	}
	return nil
}

// corruptCAError is a CA Secret that exists but does not hold a valid CA. rukpak does not replace it
// on its own: bundles' webhooks trust it, and a person may have put it there.
type corruptCAError struct {
	secret *corev1.Secret
	err    error
}

func (e *corruptCAError) Error() string {
	return fmt.Sprintf("the webhook CA Secret %s/%s does not hold a valid CA (%s, %s: %v); rukpak does not replace it on its own: "+
		"fix it, or delete it to have rukpak create a new CA (BundleDeployments with webhooks are then re-rendered)",
		e.secret.Namespace, e.secret.Name, corev1.TLSCertKey, corev1.TLSPrivateKeyKey, e.err)
}

// caWriteAttempts bounds how often loadOrRotateCA reads again after losing a race with another
// replica (AlreadyExists on create, Conflict on update).
const caWriteAttempts = 3

// loadOrRotateCA reads the webhook CA from its Secret, creating it when missing and replacing it
// when it needs rotation; the replaced CA is kept as previous so both stay trusted meanwhile. rotated
// is true when this call created or replaced the CA. It is race-free by construction: several
// replicas may call it at once; a create that finds the Secret already there, or an update whose
// resourceVersion is stale, reads the Secret again and uses what the winner stored. A Secret that
// does not hold a valid CA is a *corruptCAError and is left as it is.
func loadOrRotateCA(ctx context.Context, secrets typedcorev1.SecretInterface, now time.Time, validity time.Duration) (ca *certs.CA, previous []*certs.CA, rotated bool, err error) {
	for attempt := 1; ; attempt++ {
		ca, previous, rotated, err = loadOrRotateCAOnce(ctx, secrets, now, validity)
		if err == nil || attempt == caWriteAttempts || !(apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err)) {
			return ca, previous, rotated, err
		}
	}
}

func loadOrRotateCAOnce(ctx context.Context, secrets typedcorev1.SecretInterface, now time.Time, validity time.Duration) (ca *certs.CA, previous []*certs.CA, rotated bool, err error) {
	s, err := secrets.Get(ctx, caSecretName, metav1.GetOptions{})
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, nil, false, fmt.Errorf("reading the webhook CA Secret %s: %w", caSecretName, err)
	}
	var current *certs.CA
	if found {
		var perr error
		if current, perr = certs.ParseCA(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); perr != nil {
			return nil, nil, false, &corruptCAError{secret: s, err: perr}
		}
		if !current.NeedsRotation(now) {
			if p, err := certs.ParseCA(s.Data[previousCert], s.Data[previousKey]); err == nil && now.Before(p.Cert.NotAfter) {
				previous = append(previous, p)
			}
			return current, previous, false, nil
		}
	}
	certPEM, keyPEM, err := certs.GenerateCA("rukpak-webhook-ca", now.Add(-time.Hour), validity)
	if err != nil {
		return nil, nil, false, err
	}
	data := map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}
	if current != nil && now.Before(current.Cert.NotAfter) {
		data[previousCert], data[previousKey] = s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
		previous = append(previous, current)
	}
	if found {
		s.Data = data
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{}) // a stale resourceVersion: another replica rotated
	} else {
		_, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: caSecretName},
			Type:       corev1.SecretTypeOpaque,
			Data:       data,
		}, metav1.CreateOptions{})
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("storing the webhook CA in Secret %s: %w", caSecretName, err)
	}
	ca, err = certs.ParseCA(certPEM, keyPEM)
	return ca, previous, true, err
}
