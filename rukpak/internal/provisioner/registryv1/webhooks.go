package registryv1

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/certs"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/manifest"
)

// Where the serving certificate is mounted in webhook containers: the paths OLM v0 uses, which
// controller-runtime (/tmp/k8s-webhook-server/serving-certs, tls.crt/tls.key) and
// apiserver-based operators (/apiserver.local.config/certificates, apiserver.crt/apiserver.key) read.
const (
	webhookCertVolume    = "rukpak-webhook-cert"
	webhookCertPath      = "/tmp/k8s-webhook-server/serving-certs"
	apiserviceCertVolume = "rukpak-apiservice-cert"
	olmv0WebhookCertVol  = "webhook-cert"
	olmv0APIServiceVol   = "apiservice-cert"
	// OLMCAHashAnnotation is the pod template annotation in which OLM v0 records the hash of the CA
	// of a webhook Deployment's serving certificate (kept with spec.config.olmv0.caHash).
	OLMCAHashAnnotation   = "olmcahash"
	apiserviceCertPath    = "/apiserver.local.config/certificates"
	defaultWebhookPort    = int32(443)
	webhookServiceSuffix  = "service"
	namespaceNameLabelKey = "kubernetes.io/metadata.name"
)

// webhookObjects are what the CSV's webhookdefinitions render to.
type webhookObjects struct {
	services   []*corev1.Service
	validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	mutating   []*admissionregistrationv1.MutatingWebhookConfiguration
	certObjs   []client.Object
	// crdAnnotations are added to CRDs whose conversion is a webhook.
	crdAnnotations map[string]map[string]string
}

// WebhookServiceName is the name of the Service rendered for the webhooks of a Deployment:
// "<deployment>-service", made a valid Service name (a DNS-1035 label) deterministically. Dots,
// which Deployment names may hold, become dashes (as upstream OLM v1 does); a name not starting with
// a letter gets the prefix "svc-"; a name longer than 63 characters is cut and suffixed with a hash
// of the Deployment's name, so that it stays unique.
func WebhookServiceName(deployment string) string {
	name := strings.ReplaceAll(deployment, ".", "-") + "-" + webhookServiceSuffix
	if name[0] < 'a' || name[0] > 'z' {
		name = "svc-" + name
	}
	if len(name) <= validation.DNS1035LabelMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(deployment))
	h := hex.EncodeToString(sum[:])[:10]
	suffix := "-" + h + "-" + webhookServiceSuffix
	return strings.TrimRight(name[:validation.DNS1035LabelMaxLength-len(suffix)], "-") + suffix
}

// buildWebhooks renders a Service per webhook Deployment (one port per container port), one
// webhook configuration per validating or mutating definition (named after its generateName),
// and sets the conversion of CRDs served by a conversion webhook. The certificate provider supplies
// the serving Secret and the CA; the Secret is mounted into the Deployment's containers.
func buildWebhooks(csv *operatorsv1alpha1.ClusterServiceVersion, deployments []*appsv1.Deployment, crds []manifest.Object,
	installNamespace string, mode InstallMode, provider certs.Provider, olmv0 *rukpakv1alpha1.OLMv0Rendering) (*webhookObjects, error) {
	defs := csv.Spec.WebhookDefinitions
	out := &webhookObjects{crdAnnotations: map[string]map[string]string{}}
	if len(defs) == 0 {
		return out, nil
	}
	if provider == nil {
		return nil, &reasonError{reason: ReasonWebhooksUnsupported, msg: fmt.Sprintf(
			"ClusterServiceVersion %q declares webhooks but rukpak runs without a certificate provider; start rukpak with one (self-signed, cert-manager or openshift-service-ca)", csv.Name)}
	}
	byName := map[string]*appsv1.Deployment{}
	for _, d := range deployments {
		byName[d.Name] = d
	}
	crdByName := map[string]*unstructured.Unstructured{}
	for _, c := range crds {
		crdByName[c.Obj.GetName()] = c.Obj
	}

	ports, err := webhookPorts(csv, byName)
	if err != nil {
		return nil, err
	}
	injections, err := out.addServices(csv, byName, ports, installNamespace, provider, olmv0)
	if err != nil {
		return nil, err
	}
	if err := out.addConfigs(csv, crdByName, injections, installNamespace, mode); err != nil {
		return nil, err
	}
	return out, nil
}

// webhookPorts maps each webhook Deployment to its Service ports (container port → target port),
// checking that every definition names a Deployment of the CSV and that a port has one target.
func webhookPorts(csv *operatorsv1alpha1.ClusterServiceVersion, byName map[string]*appsv1.Deployment) (map[string]map[int32]intstr.IntOrString, error) {
	defs := csv.Spec.WebhookDefinitions
	ports := map[string]map[int32]intstr.IntOrString{} // deployment → service port → target port
	for i := range defs {
		w := &defs[i]
		where := fmt.Sprintf("ClusterServiceVersion %q webhookdefinitions[%d] (%s)", csv.Name, i, w.GenerateName)
		if w.GenerateName == "" {
			return nil, invalidf("%s: generateName is empty", where)
		}
		if _, ok := byName[w.DeploymentName]; !ok {
			return nil, invalidf("%s: deploymentName %q is not a deployment of spec.install.spec.deployments", where, w.DeploymentName)
		}
		port := w.ContainerPort
		if port == 0 {
			port = defaultWebhookPort
		}
		target := intstr.FromInt32(port)
		if w.TargetPort != nil {
			target = *w.TargetPort
		}
		if ports[w.DeploymentName] == nil {
			ports[w.DeploymentName] = map[int32]intstr.IntOrString{}
		}
		if prev, ok := ports[w.DeploymentName][port]; ok && prev != target {
			return nil, invalidf("%s: containerPort %d targets %s, but another webhook of deployment %q targets %s through the same port",
				where, port, target.String(), w.DeploymentName, prev.String())
		}
		ports[w.DeploymentName][port] = target
	}
	return ports, nil
}

// addServices renders a Service per webhook Deployment, the provider's certificate objects, and
// mounts the serving Secret; it returns each Deployment's CA injection.
func (out *webhookObjects) addServices(csv *operatorsv1alpha1.ClusterServiceVersion, byName map[string]*appsv1.Deployment,
	ports map[string]map[int32]intstr.IntOrString, installNamespace string, provider certs.Provider,
	olmv0 *rukpakv1alpha1.OLMv0Rendering) (map[string]certs.Injection, error) {
	var extraTrust []byte
	if olmv0 != nil {
		extraTrust = olmv0.CABundle
	}
	order := sortedKeys(ports)
	injections := map[string]certs.Injection{}
	svcOf := map[string]string{} // Service name → Deployment
	for _, dname := range order {
		d := byName[dname]
		svcRef := certs.Service{Name: WebhookServiceName(dname), Namespace: installNamespace}
		if other, ok := svcOf[svcRef.Name]; ok {
			return nil, invalidf("ClusterServiceVersion %q: the webhook Deployments %q and %q would both be served by Service %q (dots become dashes in Service names); rename one of them",
				csv.Name, other, dname, svcRef.Name)
		}
		svcOf[svcRef.Name] = dname
		svc, err := webhookService(svcRef, d, ports[dname], olmv0 != nil)
		if err != nil {
			return nil, invalidf("ClusterServiceVersion %q: webhook Service for deployment %q: %v", csv.Name, dname, err)
		}
		provider.ModifyService(svc)
		out.services = append(out.services, svc)
		objs, err := provider.Objects(svcRef)
		if err != nil {
			return nil, fmt.Errorf("%s certificate provider: %w", provider.Name(), err)
		}
		out.certObjs = append(out.certObjs, objs...)
		inj, err := provider.CAInjection(svcRef)
		if err != nil {
			return nil, fmt.Errorf("%s certificate provider: %w", provider.Name(), err)
		}
		if len(inj.CABundle) > 0 && len(extraTrust) > 0 {
			// OLM v0's CAs (spec.config.olmv0.caBundle) stay trusted beside the provider's.
			b := append([]byte(nil), inj.CABundle...)
			if b[len(b)-1] != '\n' {
				b = append(b, '\n')
			}
			inj.CABundle = append(b, extraTrust...)
		}
		injections[dname] = inj
		if olmv0 != nil {
			mountServingCertOLMv0(d, certs.SecretName(svcRef.Name))
		} else {
			mountServingCert(d, certs.SecretName(svcRef.Name))
		}
	}
	return injections, nil
}

// addConfigs renders the webhook configurations and sets the conversion of CRDs.
func (out *webhookObjects) addConfigs(csv *operatorsv1alpha1.ClusterServiceVersion, crdByName map[string]*unstructured.Unstructured,
	injections map[string]certs.Injection, installNamespace string, mode InstallMode) error {
	defs := csv.Spec.WebhookDefinitions
	var nsSelector *metav1.LabelSelector
	if mode.Type != operatorsv1alpha1.InstallModeTypeAllNamespaces {
		nsSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: namespaceNameLabelKey, Operator: metav1.LabelSelectorOpIn, Values: append([]string(nil), mode.Targets...),
		}}}
	}
	seen := map[string]bool{}
	for i := range defs {
		w := &defs[i]
		inj := injections[w.DeploymentName]
		port := w.ContainerPort
		if port == 0 {
			port = defaultWebhookPort
		}
		cc := admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{
				Namespace: installNamespace, Name: WebhookServiceName(w.DeploymentName), Path: w.WebhookPath, Port: &port,
			},
			CABundle: inj.CABundle,
		}
		key := string(w.Type) + "/" + w.GenerateName
		if seen[key] && w.Type != operatorsv1alpha1.ConversionWebhook {
			return invalidf("ClusterServiceVersion %q: two %s definitions have generateName %q; names must be unique", csv.Name, w.Type, w.GenerateName)
		}
		seen[key] = true
		switch w.Type {
		case operatorsv1alpha1.ValidatingAdmissionWebhook:
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: w.GenerateName, ClientConfig: cc, Rules: w.Rules, FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy,
				NamespaceSelector: nsSelector.DeepCopy(), ObjectSelector: w.ObjectSelector, SideEffects: w.SideEffects,
				TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions,
			}}}
			c.Name, c.Annotations = w.GenerateName, copyMap(inj.Annotations)
			out.validating = append(out.validating, c)
		case operatorsv1alpha1.MutatingAdmissionWebhook:
			c := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: w.GenerateName, ClientConfig: cc, Rules: w.Rules, FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy,
				NamespaceSelector: nsSelector.DeepCopy(), ObjectSelector: w.ObjectSelector, SideEffects: w.SideEffects,
				TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions, ReinvocationPolicy: w.ReinvocationPolicy,
			}}}
			c.Name, c.Annotations = w.GenerateName, copyMap(inj.Annotations)
			out.mutating = append(out.mutating, c)
		case operatorsv1alpha1.ConversionWebhook:
			if mode.Type != operatorsv1alpha1.InstallModeTypeAllNamespaces {
				if !supportsAllNamespaces(csv) {
					return invalidf("ClusterServiceVersion %q has a conversion webhook (%s), which serves every namespace, but does not support the AllNamespaces install mode, the only one such a bundle can be installed in; the bundle must be fixed by its author",
						csv.Name, w.GenerateName)
				}
				return &reasonError{reason: ReasonUnsupportedInstallMode, msg: fmt.Sprintf(
					"ClusterServiceVersion %q has a conversion webhook (%s), which serves every namespace: it can only be installed in AllNamespaces mode (omit spec.config.watchNamespaces; Operator: spec.watchNamespaces)",
					csv.Name, w.GenerateName)}
			}
			if len(w.ConversionCRDs) == 0 {
				return invalidf("ClusterServiceVersion %q: conversion webhook %q lists no conversionCRDs", csv.Name, w.GenerateName)
			}
			if err := out.setConversion(csv, w, crdByName, installNamespace, port, inj); err != nil {
				return err
			}
		default:
			return invalidf("ClusterServiceVersion %q: webhook %q has type %q; it must be ValidatingAdmissionWebhook, MutatingAdmissionWebhook or ConversionWebhook",
				csv.Name, w.GenerateName, w.Type)
		}
	}
	return nil
}

// setConversion points the conversion of every CRD of a ConversionWebhook definition at its Service.
func (out *webhookObjects) setConversion(csv *operatorsv1alpha1.ClusterServiceVersion, w *operatorsv1alpha1.WebhookDescription,
	crdByName map[string]*unstructured.Unstructured, installNamespace string, port int32, inj certs.Injection) error {
	for _, name := range w.ConversionCRDs {
		crd, ok := crdByName[name]
		if !ok {
			return invalidf("ClusterServiceVersion %q: conversion webhook %q names CRD %q, which is not in the bundle", csv.Name, w.GenerateName, name)
		}
		versions := w.AdmissionReviewVersions
		if len(versions) == 0 {
			versions = []string{"v1"}
		}
		conversion := &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig: &apiextensionsv1.WebhookClientConfig{
					Service: &apiextensionsv1.ServiceReference{
						Namespace: installNamespace, Name: WebhookServiceName(w.DeploymentName), Path: w.WebhookPath, Port: &port,
					},
					CABundle: inj.CABundle,
				},
				ConversionReviewVersions: versions,
			},
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(conversion)
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedMap(crd.Object, m, "spec", "conversion"); err != nil {
			return fmt.Errorf("CRD %q: setting spec.conversion: %w", name, err)
		}
		out.crdAnnotations[name] = copyMap(inj.Annotations)
	}
	return nil
}

// webhookService renders the Service of a webhook Deployment; its ports are named webhook-<port>, or
// <port> as OLM v0 names them (olmv0Names), so that adopting OLM v0's Service changes no port.
func webhookService(ref certs.Service, d *appsv1.Deployment, ports map[int32]intstr.IntOrString, olmv0Names bool) (*corev1.Service, error) {
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 {
		return nil, fmt.Errorf("the deployment's spec.selector has no matchLabels to select its pods with")
	}
	svc := &corev1.Service{}
	svc.Name, svc.Namespace = ref.Name, ref.Namespace
	svc.Spec.Selector = copyMap(d.Spec.Selector.MatchLabels)
	nums := make([]int32, 0, len(ports))
	for p := range ports {
		nums = append(nums, p)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	for _, p := range nums {
		name := fmt.Sprintf("webhook-%d", p)
		if olmv0Names {
			name = fmt.Sprint(p)
		}
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name: name, Port: p, TargetPort: ports[p], Protocol: corev1.ProtocolTCP,
		})
	}
	return svc, nil
}

// mountServingCert mounts the serving Secret into every container at the paths webhook servers
// read, replacing whatever the bundle mounted there.
func mountServingCert(d *appsv1.Deployment, secret string) {
	pod := &d.Spec.Template.Spec
	mounts := []corev1.VolumeMount{
		{Name: webhookCertVolume, MountPath: webhookCertPath, ReadOnly: true},
		{Name: apiserviceCertVolume, MountPath: apiserviceCertPath, ReadOnly: true},
	}
	replaced := map[string]bool{}
	for i := range pod.Containers {
		c := &pod.Containers[i]
		kept := c.VolumeMounts[:0:0]
		for _, m := range c.VolumeMounts {
			if m.MountPath == webhookCertPath || m.MountPath == apiserviceCertPath || m.Name == webhookCertVolume || m.Name == apiserviceCertVolume {
				replaced[m.Name] = true
				continue
			}
			kept = append(kept, m)
		}
		c.VolumeMounts = append(kept, mounts...)
	}
	// Drop volumes only the replaced mounts used, and any of the two added below.
	kept := pod.Volumes[:0:0]
	for _, v := range pod.Volumes {
		if v.Name != webhookCertVolume && v.Name != apiserviceCertVolume {
			kept = append(kept, v)
		}
	}
	pod.Volumes = kept
	dropUnused(pod, replaced)
	pod.Volumes = append(pod.Volumes,
		corev1.Volume{Name: webhookCertVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret,
			Items:      []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: "tls.crt"}, {Key: corev1.TLSPrivateKeyKey, Path: "tls.key"}},
		}}},
		corev1.Volume{Name: apiserviceCertVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret,
			Items:      []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: "apiserver.crt"}, {Key: corev1.TLSPrivateKeyKey, Path: "apiserver.key"}},
		}}},
	)
}

// mountServingCertOLMv0 mounts the serving Secret the way OLM v0's installer does, so that the pod
// template of a Deployment OLM v0 installed is rendered unchanged (spec.config.olmv0): volume
// apiservice-cert (tls.crt and tls.key as apiserver.crt and apiserver.key), then webhook-cert
// (tls.crt, tls.key), each replacing a volume of the same name where it stands or else appended; in
// every container, a mount of that volume is kept as it is, a mount at the same path (of another
// volume) is replaced where it stands, and otherwise one is appended, not read-only (secret volumes
// are read-only anyway). Unlike OLM v0, a volume that only the replaced mounts used is dropped, as
// mountServingCert does: left in the pod it could keep the pod from starting (a Secret that does not
// exist); a pod template holding one differs from the render, which `kubectl olmv1 migrate` reports.
func mountServingCertOLMv0(d *appsv1.Deployment, secret string) {
	pod := &d.Spec.Template.Spec
	replaced := map[string]bool{}
	for _, v := range []struct {
		name, path string
		items      []corev1.KeyToPath
	}{
		{olmv0APIServiceVol, apiserviceCertPath, []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: "apiserver.crt"}, {Key: corev1.TLSPrivateKeyKey, Path: "apiserver.key"}}},
		{olmv0WebhookCertVol, webhookCertPath, []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: "tls.crt"}, {Key: corev1.TLSPrivateKeyKey, Path: "tls.key"}}},
	} {
		vol := corev1.Volume{Name: v.name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret, Items: v.items}}}
		at := -1
		for i := range pod.Volumes {
			if pod.Volumes[i].Name == v.name {
				at = i
				break
			}
		}
		if at >= 0 {
			pod.Volumes[at] = vol
		} else {
			pod.Volumes = append(pod.Volumes, vol)
		}
		mount := corev1.VolumeMount{Name: v.name, MountPath: v.path}
		for i := range pod.Containers {
			c := &pod.Containers[i]
			found := false
			for j, m := range c.VolumeMounts {
				if m.Name == mount.Name {
					found = true
					break
				}
				if m.MountPath == mount.MountPath {
					replaced[m.Name] = true
					c.VolumeMounts[j] = mount
					found = true
					break
				}
			}
			if !found {
				c.VolumeMounts = append(c.VolumeMounts, mount)
			}
		}
	}
	dropUnused(pod, replaced)
}

// dropUnused removes the volumes named in replaced that no container mounts any more.
func dropUnused(pod *corev1.PodSpec, replaced map[string]bool) {
	used := map[string]bool{}
	for _, cs := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
		for _, c := range cs {
			for _, m := range c.VolumeMounts {
				used[m.Name] = true
			}
		}
	}
	kept := pod.Volumes[:0:0]
	for _, v := range pod.Volumes {
		if replaced[v.Name] && !used[v.Name] {
			continue
		}
		kept = append(kept, v)
	}
	pod.Volumes = kept
}

func supportsAllNamespaces(csv *operatorsv1alpha1.ClusterServiceVersion) bool {
	for _, m := range csv.Spec.InstallModes {
		if m.Type == operatorsv1alpha1.InstallModeTypeAllNamespaces && m.Supported {
			return true
		}
	}
	return false
}

func invalidf(format string, args ...any) error {
	return &reasonError{reason: ReasonInvalidBundle, msg: fmt.Sprintf(format, args...)}
}
