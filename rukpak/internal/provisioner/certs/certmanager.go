package certs

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InjectCAFromAnnotation makes cert-manager's cainjector copy a Certificate's CA into caBundle.
const InjectCAFromAnnotation = "cert-manager.io/inject-ca-from"

// IssuerRef names an existing cert-manager Issuer (in the Service's namespace) or ClusterIssuer.
type IssuerRef struct {
	// Kind is Issuer or ClusterIssuer.
	Kind string
	Name string
}

// CertManager renders cert-manager Certificates; cert-manager writes and renews the serving Secret
// and its cainjector fills in caBundle. With no IssuerRef, a self-signed Issuer is rendered per
// Service.
type CertManager struct {
	issuer *IssuerRef
}

// NewCertManager returns the cert-manager provider; issuer may be nil.
func NewCertManager(issuer *IssuerRef) *CertManager { return &CertManager{issuer: issuer} }

var _ Provider = (*CertManager)(nil)

// Name implements Provider.
func (*CertManager) Name() string { return CertManagerName }

// CertificateName is the name of the Certificate rendered for a Service.
func CertificateName(service string) string { return service + "-cert" }

// IssuerName is the name of the self-signed Issuer rendered for a Service when no issuer is given.
func IssuerName(service string) string { return service + "-selfsigned" }

// Objects implements Provider: a Certificate (and a self-signed Issuer when no issuer is given).
func (c *CertManager) Objects(svc Service) ([]client.Object, error) {
	var out []client.Object
	issuer := c.issuer
	if issuer == nil {
		iss := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cert-manager.io/v1",
			"kind":       "Issuer",
			"metadata":   map[string]any{"name": IssuerName(svc.Name), "namespace": svc.Namespace},
			"spec":       map[string]any{"selfSigned": map[string]any{}},
		}}
		out = append(out, iss)
		issuer = &IssuerRef{Kind: "Issuer", Name: IssuerName(svc.Name)}
	}
	if issuer.Kind != "Issuer" && issuer.Kind != "ClusterIssuer" {
		return nil, fmt.Errorf("cert-manager issuer kind %q must be Issuer or ClusterIssuer", issuer.Kind)
	}
	dns := make([]any, 0, 2)
	for _, n := range svc.DNSNames() {
		dns = append(dns, n)
	}
	cert := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1",
		"kind":       "Certificate",
		"metadata":   map[string]any{"name": CertificateName(svc.Name), "namespace": svc.Namespace},
		"spec": map[string]any{
			"secretName": SecretName(svc.Name),
			"commonName": svc.DNSNames()[0],
			"dnsNames":   dns,
			"usages":     []any{"server auth", "digital signature", "key encipherment"},
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
			"issuerRef":  map[string]any{"group": "cert-manager.io", "kind": issuer.Kind, "name": issuer.Name},
		},
	}}
	return append(out, cert), nil
}

// ModifyService implements Provider: nothing to add.
func (*CertManager) ModifyService(*corev1.Service) {}

// CAInjection implements Provider.
func (*CertManager) CAInjection(svc Service) (Injection, error) {
	return Injection{Annotations: map[string]string{InjectCAFromAnnotation: svc.Namespace + "/" + CertificateName(svc.Name)}}, nil
}
