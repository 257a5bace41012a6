package certs

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OpenShift service-ca annotations.
const (
	ServingCertSecretAnnotation = "service.beta.openshift.io/serving-cert-secret-name"
	InjectCABundleAnnotation    = "service.beta.openshift.io/inject-cabundle"
)

// OpenShiftServiceCA asks OpenShift's service-ca operator to write the serving Secret (annotation on
// the Service) and to inject its CA into webhook configurations and CRDs. service-ca rotates both.
type OpenShiftServiceCA struct{}

// NewOpenShiftServiceCA returns the OpenShift service-ca provider.
func NewOpenShiftServiceCA() *OpenShiftServiceCA { return &OpenShiftServiceCA{} }

var _ Provider = (*OpenShiftServiceCA)(nil)

// Name implements Provider.
func (*OpenShiftServiceCA) Name() string { return OpenShiftServiceCAName }

// Objects implements Provider: service-ca creates the Secret, nothing is rendered.
func (*OpenShiftServiceCA) Objects(Service) ([]client.Object, error) { return nil, nil }

// ModifyService implements Provider.
func (*OpenShiftServiceCA) ModifyService(svc *corev1.Service) {
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	svc.Annotations[ServingCertSecretAnnotation] = SecretName(svc.Name)
}

// CAInjection implements Provider.
func (*OpenShiftServiceCA) CAInjection(Service) (Injection, error) {
	return Injection{Annotations: map[string]string{InjectCABundleAnnotation: "true"}}, nil
}
