package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/olmv1/olmv1/platform/conditionevents"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/certs"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/registryv1"
)

// webhookFlags are the flags of the registry+v1 webhooks' certificate provider.
type webhookFlags struct {
	provider   string
	issuerKind string
	issuerName string

	// rotator keeps the self-signed CA fresh while rukpak runs (nil for the other providers).
	rotator *certs.CARotator
	// recorder and log report a corrupt CA Secret (an Event on the Secret and an error line).
	recorder conditionevents.Recorder
	log      logr.Logger
}

func (w *webhookFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&w.provider, "webhook-cert-provider", certs.SelfSignedName,
		"who issues the serving certificates of registry+v1 bundles' webhooks: "+strings.Join(certs.Names, ", ")+
			" (self-signed: a CA rukpak keeps in the Secret "+certs.WebhookCASecretName+" of --namespace, valid for a year and rotated while rukpak runs"+
			" once a third of its validity is left; the replaced CA stays trusted until it expires)")
	fs.StringVar(&w.issuerKind, "cert-manager-issuer-kind", "ClusterIssuer", "cert-manager: kind of the issuer named by --cert-manager-issuer-name (Issuer or ClusterIssuer)")
	fs.StringVar(&w.issuerName, "cert-manager-issuer-name", "", "cert-manager: issuer to sign with (empty: a self-signed Issuer per webhook Service)")
}

// registryRenderer builds the registry+v1 renderer with the selected certificate provider. With the
// self-signed provider it loads the CA and prepares w.rotator, which startRotation runs.
func (w *webhookFlags) registryRenderer(ctx context.Context, cs kubernetes.Interface, namespace string) (provisioner.Renderer, error) {
	if w.provider == certs.SelfSignedName {
		w.rotator = certs.NewCARotator(cs.CoreV1().Secrets(namespace), certs.WebhookCAValidity)
		w.rotator.Recorder, w.rotator.Log = w.recorder, w.log
		if err := w.rotator.Load(ctx); err != nil {
			return nil, err
		}
		return registryv1.New(registryv1.WithCertProvider(w.rotator.Provider())), nil
	}
	var issuer *certs.IssuerRef
	if w.issuerName != "" {
		issuer = &certs.IssuerRef{Kind: w.issuerKind, Name: w.issuerName}
	}
	p, err := certs.NewByName(w.provider, nil, nil, issuer)
	if err != nil {
		return nil, fmt.Errorf("--webhook-cert-provider: %w", err)
	}
	return registryv1.New(registryv1.WithCertProvider(p)), nil
}

// startRotation adds the CA rotator to the manager (when there is one); after each rotation
// resync re-renders every BundleDeployment, so their Secrets and caBundles follow the new CA.
func (w *webhookFlags) startRotation(mgr ctrl.Manager, resync func(context.Context) error) error {
	if w.rotator == nil {
		return nil
	}
	w.rotator.OnRotate = resync
	w.rotator.Log = mgr.GetLogger().WithName("webhook-ca")
	return mgr.Add(w.rotator)
}
