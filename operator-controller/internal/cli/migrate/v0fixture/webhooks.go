package v0fixture

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"strconv"
	"time"

	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What OLM v0 writes for a CSV's webhookdefinitions (docs/migration.md cites
// pkg/controller/install/certresources.go and webhook.go): per webhook Deployment a CA of its own,
// the Service <deployment>-service, the serving Secret <service>-cert (olmcahash annotation), a Role
// and RoleBinding of that name to read it, the auth-delegator ClusterRoleBinding and the kube-system
// auth-reader RoleBinding; the cert volumes and the olmcahash annotation in the pod template; and a
// webhook configuration per validating or mutating definition, named from its generateName.

// Names and keys OLM v0 uses.
const (
	annotationCAHash       = "olmcahash"
	secretKeyCA            = "olmCAKey"
	labelWebhookDesc       = "olm.webhook-description-generate-name"
	volumeWebhookCert      = "webhook-cert"
	volumeAPIServiceCert   = "apiservice-cert"
	pathWebhookCert        = "/tmp/k8s-webhook-server/serving-certs"
	pathAPIServiceCert     = "/apiserver.local.config/certificates"
	defaultWebhookPortOLM0 = 443
)

// webhookCerts is the CA and serving pair OLM v0 generated for one Deployment.
type webhookCerts struct {
	caPEM, certPEM, keyPEM []byte
	caHash                 string
}

// newWebhookCerts generates a CA and a serving certificate for service in ns.
func newWebhookCerts(service, ns string) (*webhookCerts, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "olm-selfsigned", Organization: []string{"Red Hat, Inc."}},
		NotBefore: now, NotAfter: now.Add(730 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	hosts := []string{service + "." + ns, service + "." + ns + ".svc"}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: hosts[0], Organization: []string{"Red Hat, Inc."}}, DNSNames: hosts,
		NotBefore: now, NotAfter: now.Add(730 * 24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	w := &webhookCerts{
		caPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	sum := sha256.Sum256(w.caPEM)
	w.caHash = hex.EncodeToString(sum[:])
	return w, nil
}

// withCertVolumes is the deployment spec as OLM v0's installer leaves it before writing the
// Deployment: the Secret mounted as apiservice-cert and webhook-cert in every container, and the
// template annotations set to olmcahash (the CSV's annotations are merged in afterwards).
func withCertVolumes(spec appsv1.DeploymentSpec, secret, caHash string) appsv1.DeploymentSpec {
	out := *spec.DeepCopy()
	for _, v := range []struct {
		name, path string
		items      []corev1.KeyToPath
	}{
		{volumeAPIServiceCert, pathAPIServiceCert, []corev1.KeyToPath{{Key: "tls.crt", Path: "apiserver.crt"}, {Key: "tls.key", Path: "apiserver.key"}}},
		{volumeWebhookCert, pathWebhookCert, []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}}},
	} {
		out.Template.Spec.Volumes = append(out.Template.Spec.Volumes, corev1.Volume{Name: v.name,
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret, Items: v.items}}})
		for i := range out.Template.Spec.Containers {
			out.Template.Spec.Containers[i].VolumeMounts = append(out.Template.Spec.Containers[i].VolumeMounts, corev1.VolumeMount{Name: v.name, MountPath: v.path})
		}
	}
	out.Template.Annotations = map[string]string{annotationCAHash: caHash}
	return out
}

// installWebhooks writes OLM v0's certificate resources and webhook configurations for csv, and
// returns the deployment specs with the cert volumes (by Deployment name) and the CA of each.
func installWebhooks(ctx context.Context, c client.Client, csv *v0.ClusterServiceVersion, owner metav1.OwnerReference, ownerLabels map[string]string) (map[string]appsv1.DeploymentSpec, error) {
	specs := map[string]appsv1.DeploymentSpec{}
	cas := map[string][]byte{}
	ns := csv.Namespace
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		var ports []corev1.ServicePort
		for _, w := range csv.Spec.WebhookDefinitions {
			if w.DeploymentName != d.Name {
				continue
			}
			port := int32(defaultWebhookPortOLM0)
			if w.ContainerPort > 0 {
				port = w.ContainerPort
			}
			target := intstr.FromInt32(port)
			if w.TargetPort != nil {
				target = *w.TargetPort
			}
			sp := corev1.ServicePort{Name: strconv.Itoa(int(port)), Port: port, TargetPort: target}
			if !containsPort(ports, sp) {
				ports = append(ports, sp)
			}
		}
		if len(ports) == 0 {
			continue
		}
		svcName := d.Name + "-service"
		secretName := svcName + "-cert"
		certs, err := newWebhookCerts(svcName, ns)
		if err != nil {
			return nil, err
		}
		sa := d.Spec.Template.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}
		for _, obj := range []client.Object{
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svcName, Namespace: ns, OwnerReferences: []metav1.OwnerReference{owner}},
				Spec: corev1.ServiceSpec{Ports: ports, Selector: d.Spec.Selector.MatchLabels}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: ns, OwnerReferences: []metav1.OwnerReference{owner},
				Annotations: map[string]string{annotationCAHash: certs.caHash}}, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{"tls.crt": certs.certPEM, "tls.key": certs.keyPEM, secretKeyCA: certs.caPEM}},
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: ns, OwnerReferences: []metav1.OwnerReference{owner}},
				Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{secretName}}}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: ns, OwnerReferences: []metav1.OwnerReference{owner}},
				Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: secretName}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: svcName + "-system:auth-delegator", Labels: ownerLabels},
				Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: svcName + "-auth-reader", Namespace: "kube-system", Labels: ownerLabels},
				Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"}},
		} {
			if err := c.Create(ctx, obj, client.FieldOwner(olmManager)); err != nil {
				return nil, fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
			}
		}
		specs[d.Name] = withCertVolumes(d.Spec, secretName, certs.caHash)
		cas[d.Name] = certs.caPEM
	}
	return specs, installWebhookConfigurations(ctx, c, csv, ownerLabels, cas)
}

// installWebhookConfigurations writes a webhook configuration per validating or mutating definition:
// generateName "<generateName>-", the CSV's owner labels and the description label, the CA of its
// Deployment, the Service's path and port.
func installWebhookConfigurations(ctx context.Context, c client.Client, csv *v0.ClusterServiceVersion, ownerLabels map[string]string, cas map[string][]byte) error {
	for _, w := range csv.Spec.WebhookDefinitions {
		labels := merge(ownerLabels, map[string]string{labelWebhookDesc: w.GenerateName})
		port := int32(defaultWebhookPortOLM0)
		if w.ContainerPort > 0 {
			port = w.ContainerPort
		}
		cc := admissionregistrationv1.WebhookClientConfig{CABundle: cas[w.DeploymentName],
			Service: &admissionregistrationv1.ServiceReference{Name: w.DeploymentName + "-service", Namespace: csv.Namespace, Path: w.WebhookPath, Port: &port}}
		meta := metav1.ObjectMeta{GenerateName: w.GenerateName + "-", Labels: labels}
		var obj client.Object
		switch w.Type {
		case v0.ValidatingAdmissionWebhook:
			obj = &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: meta, Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: w.GenerateName, Rules: w.Rules, FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy, ObjectSelector: w.ObjectSelector,
				SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions, ClientConfig: cc}}}
		case v0.MutatingAdmissionWebhook:
			obj = &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: meta, Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: w.GenerateName, Rules: w.Rules, FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy, ObjectSelector: w.ObjectSelector,
				SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions, ClientConfig: cc,
				ReinvocationPolicy: w.ReinvocationPolicy}}}
		default:
			continue // conversion webhooks are patched into the CRDs: not written by this fixture
		}
		if err := c.Create(ctx, obj, client.FieldOwner(olmManager)); err != nil {
			return fmt.Errorf("creating the webhook configuration of %s: %w", w.GenerateName, err)
		}
	}
	return nil
}

func containsPort(ports []corev1.ServicePort, p corev1.ServicePort) bool {
	for _, q := range ports {
		if q == p {
			return true
		}
	}
	return false
}
