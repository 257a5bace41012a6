package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
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
	if w.provider == certs.SelfSignedName {
		if ca, previous, _, err = loadOrRotateCA(ctx, secrets, time.Now(), caValidity); err != nil {
			return nil, err
		}
	}
	if w.issuerName != "" {
		issuer = &certs.IssuerRef{Kind: w.issuerKind, Name: w.issuerName}
	}
	p, err := certs.NewByName(w.provider, ca, previous, issuer)
	if err != nil {
		return nil, fmt.Errorf("--webhook-cert-provider: %w", err)
	}
	if ss, ok := p.(*certs.SelfSigned); ok {
		w.rotator = newCARotator(secrets, ss, caValidity)
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
	log      logr.Logger
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

// loadOrRotateCA reads the webhook CA from its Secret, creating it when missing and replacing it
// when it needs rotation; the replaced CA is kept as previous so both stay trusted meanwhile. rotated
// is true when this call created or replaced the CA.
func loadOrRotateCA(ctx context.Context, secrets typedcorev1.SecretInterface, now time.Time, validity time.Duration) (ca *certs.CA, previous []*certs.CA, rotated bool, err error) {
	s, err := secrets.Get(ctx, caSecretName, metav1.GetOptions{})
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, nil, false, fmt.Errorf("reading the webhook CA Secret %s: %w", caSecretName, err)
	}
	var current *certs.CA
	if found {
		current, _ = certs.ParseCA(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		if current != nil && !current.NeedsRotation(now) {
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
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{}) // a conflict (another replica rotated) is retried by the caller
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
