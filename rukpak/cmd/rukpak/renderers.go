package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

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
)

type webhookFlags struct {
	provider   string
	issuerKind string
	issuerName string
}

func (w *webhookFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&w.provider, "webhook-cert-provider", certs.SelfSignedName,
		"who issues the serving certificates of registry+v1 bundles' webhooks: "+strings.Join(certs.Names, ", ")+
			" (self-signed: a CA rukpak keeps in the Secret "+caSecretName+" of --namespace and rotates at start-up when a third of its validity is left)")
	fs.StringVar(&w.issuerKind, "cert-manager-issuer-kind", "ClusterIssuer", "cert-manager: kind of the issuer named by --cert-manager-issuer-name (Issuer or ClusterIssuer)")
	fs.StringVar(&w.issuerName, "cert-manager-issuer-name", "", "cert-manager: issuer to sign with (empty: a self-signed Issuer per webhook Service)")
}

// registryRenderer builds the registry+v1 renderer with the selected certificate provider.
func (w *webhookFlags) registryRenderer(ctx context.Context, cs kubernetes.Interface, namespace string) (provisioner.Renderer, error) {
	var (
		ca       *certs.CA
		previous []*certs.CA
		issuer   *certs.IssuerRef
		err      error
	)
	if w.provider == certs.SelfSignedName {
		if ca, previous, err = loadOrRotateCA(ctx, cs, namespace, time.Now()); err != nil {
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
	return registryv1.New(registryv1.WithCertProvider(p)), nil
}

// loadOrRotateCA reads the webhook CA from its Secret, creating it when missing and replacing it
// when it needs rotation; the replaced CA is kept as previous so both stay trusted meanwhile.
func loadOrRotateCA(ctx context.Context, cs kubernetes.Interface, namespace string, now time.Time) (*certs.CA, []*certs.CA, error) {
	secrets := cs.CoreV1().Secrets(namespace)
	s, err := secrets.Get(ctx, caSecretName, metav1.GetOptions{})
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("reading the webhook CA Secret %s/%s: %w", namespace, caSecretName, err)
	}
	var current *certs.CA
	if found {
		current, _ = certs.ParseCA(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		if current != nil && !current.NeedsRotation(now) {
			var previous []*certs.CA
			if p, err := certs.ParseCA(s.Data[previousCert], s.Data[previousKey]); err == nil && now.Before(p.Cert.NotAfter) {
				previous = append(previous, p)
			}
			return current, previous, nil
		}
	}
	certPEM, keyPEM, err := certs.GenerateCA("rukpak-webhook-ca", now.Add(-time.Hour), caValidity)
	if err != nil {
		return nil, nil, err
	}
	data := map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}
	var previous []*certs.CA
	if current != nil {
		data[previousCert], data[previousKey] = s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
		previous = append(previous, current)
	}
	if found {
		s.Data = data
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	} else {
		_, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: caSecretName, Namespace: namespace},
			Type:       corev1.SecretTypeOpaque,
			Data:       data,
		}, metav1.CreateOptions{})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("storing the webhook CA in Secret %s/%s: %w", namespace, caSecretName, err)
	}
	ca, err := certs.ParseCA(certPEM, keyPEM)
	return ca, previous, err
}
