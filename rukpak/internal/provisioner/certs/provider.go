// Package certs provides the serving certificates of the webhook Services a registry+v1 bundle
// declares. A Provider never talks to the cluster: it contributes objects (a Secret, or the objects
// that make someone else write it), Service annotations, and what the API server needs to trust the
// certificate (a caBundle, or annotations that make an injector fill it in).
//
// Every provider ends with a Secret named SecretName(service) holding tls.crt and tls.key in the
// Service's namespace; the registry+v1 renderer mounts it into the webhook's Deployment.
//
// The self-signed provider's CA lives in the Secret WebhookCASecretName; CARotator (webhookca.go),
// the one part of this package that talks to the cluster, creates and rotates it. Certificate
// mechanics (issue, parse, encode, when to renew) are rukpak/pkg/pki's.
package certs

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Service names a webhook Service that needs a serving certificate.
type Service struct {
	Name      string
	Namespace string
}

// DNSNames are the names the API server uses to reach the Service.
func (s Service) DNSNames() []string {
	return []string{s.Name + "." + s.Namespace + ".svc", s.Name + "." + s.Namespace + ".svc.cluster.local"}
}

// SecretName is the name of the Secret holding the serving certificate of the Service.
func SecretName(service string) string { return service + "-cert" }

// Injection tells the renderer how the API server learns to trust a Service's certificate: CABundle
// is set as the caBundle of webhook client configs and CRD conversion webhooks; Annotations are added
// to the webhook configurations and CRDs (for injectors that fill caBundle in themselves).
type Injection struct {
	CABundle    []byte
	Annotations map[string]string
}

// Provider supplies serving certificates.
type Provider interface {
	// Name identifies the provider in messages, e.g. "self-signed".
	Name() string
	// Objects returns the objects to apply for svc: the serving Secret or what produces it.
	Objects(svc Service) ([]client.Object, error)
	// ModifyService adds what the provider needs on the Service object itself.
	ModifyService(svc *corev1.Service)
	// CAInjection returns how clients of svc learn to trust its certificate.
	CAInjection(svc Service) (Injection, error)
}
