package bundlegen

import (
	"fmt"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// defaultWebhookPort is the port Kubernetes calls a webhook Service on when the config names none.
const defaultWebhookPort = int32(443)

// webhookSource is what a webhook config or CRD conversion says about where it is served.
type webhookSource struct {
	ref   *admissionregistrationv1.ServiceReference
	where string
}

// absorbWebhooks turns the webhook configurations and CRD conversion webhooks into
// webhookdefinitions; the Services that serve them are left out of the bundle (rukpak renders its
// own, "<deployment>-service"); other Services go into in.other.
func absorbWebhooks(in *inputs, w *warnings) ([]operatorsv1alpha1.WebhookDescription, error) {
	var deps []appsv1.Deployment
	for _, d := range in.deployments {
		var dep appsv1.Deployment
		if err := toTyped(d, &dep); err != nil {
			return nil, err
		}
		deps = append(deps, dep)
	}
	services := map[string]*corev1.Service{}
	for _, o := range in.services {
		var svc corev1.Service
		if err := toTyped(o, &svc); err != nil {
			return nil, err
		}
		services[o.Obj.GetName()] = &svc
	}
	used := map[string]bool{}
	// target resolves where a webhook is served: its Deployment, container port and target port.
	target := func(src webhookSource) (string, int32, *intstr.IntOrString, error) {
		if src.ref == nil {
			return "", 0, nil, fmt.Errorf("%s calls a URL; the webhooks of a bundle must be served by one of its Deployments through a Service (clientConfig.service)", src.where)
		}
		svc, ok := services[src.ref.Name]
		if !ok {
			return "", 0, nil, fmt.Errorf("%s is served by Service %q, which is not in the manifests; add it (it selects the webhook's Deployment)", src.where, src.ref.Name)
		}
		dep, err := selectedDeployment(svc, deps)
		if err != nil {
			return "", 0, nil, fmt.Errorf("%s: %w", src.where, err)
		}
		used[svc.Name] = true
		port := defaultWebhookPort
		if src.ref.Port != nil {
			port = *src.ref.Port
		}
		for _, p := range svc.Spec.Ports {
			if p.Port == port && p.TargetPort != (intstr.IntOrString{}) && p.TargetPort != intstr.FromInt32(port) {
				t := p.TargetPort
				return dep, port, &t, nil
			}
		}
		return dep, port, nil, nil
	}

	var defs []operatorsv1alpha1.WebhookDescription
	for _, o := range in.webhookConfigs {
		var c admissionregistrationv1.MutatingWebhookConfiguration // a superset of the validating one
		if err := toTyped(o, &c); err != nil {
			return nil, err
		}
		typ := operatorsv1alpha1.ValidatingAdmissionWebhook
		if o.gk() == mutatingKind {
			typ = operatorsv1alpha1.MutatingAdmissionWebhook
		}
		for i, h := range c.Webhooks {
			where := fmt.Sprintf("%s webhooks[%d] (%s)", o.describe(), i, h.Name)
			dep, port, tport, err := target(webhookSource{ref: h.ClientConfig.Service, where: where})
			if err != nil {
				return nil, err
			}
			if h.NamespaceSelector != nil {
				w.add("%s: namespaceSelector dropped; rukpak selects the namespaces the operator watches", where)
			}
			d := operatorsv1alpha1.WebhookDescription{
				GenerateName: h.Name, Type: typ, DeploymentName: dep, ContainerPort: port, TargetPort: tport,
				Rules: h.Rules, FailurePolicy: h.FailurePolicy, MatchPolicy: h.MatchPolicy, ObjectSelector: h.ObjectSelector,
				SideEffects: h.SideEffects, TimeoutSeconds: h.TimeoutSeconds, AdmissionReviewVersions: h.AdmissionReviewVersions,
				WebhookPath: h.ClientConfig.Service.Path,
			}
			if typ == operatorsv1alpha1.MutatingAdmissionWebhook {
				d.ReinvocationPolicy = h.ReinvocationPolicy
			}
			defs = append(defs, d)
		}
	}
	for _, o := range in.crds {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := toTyped(o, &crd); err != nil {
			return nil, err
		}
		conv := crd.Spec.Conversion
		if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
			continue
		}
		src := webhookSource{where: o.describe() + " spec.conversion.webhook"}
		if s := conv.Webhook.ClientConfig.Service; s != nil {
			src.ref = &admissionregistrationv1.ServiceReference{Namespace: s.Namespace, Name: s.Name, Path: s.Path, Port: s.Port}
		}
		dep, port, tport, err := target(src)
		if err != nil {
			return nil, err
		}
		none := admissionregistrationv1.SideEffectClassNone
		defs = append(defs, operatorsv1alpha1.WebhookDescription{
			GenerateName: crd.Name, Type: operatorsv1alpha1.ConversionWebhook, DeploymentName: dep, ContainerPort: port,
			TargetPort: tport, WebhookPath: src.ref.Path, ConversionCRDs: []string{crd.Name}, SideEffects: &none,
			AdmissionReviewVersions: conv.Webhook.ConversionReviewVersions,
		})
	}
	for _, o := range in.services {
		if !used[o.Obj.GetName()] {
			in.other = append(in.other, o)
		}
	}
	return defs, nil
}

// selectedDeployment is the Deployment svc selects: the one whose spec.selector.matchLabels is the
// Service's selector, else the only one whose pods carry all of the selector's labels.
func selectedDeployment(svc *corev1.Service, deps []appsv1.Deployment) (string, error) {
	sel := svc.Spec.Selector
	if len(sel) == 0 {
		return "", fmt.Errorf("Service %q has no selector, so it names no Deployment to serve the webhook", svc.Name)
	}
	var matching []string
	for _, d := range deps {
		if d.Spec.Selector != nil && equalMaps(d.Spec.Selector.MatchLabels, sel) {
			return d.Name, nil
		}
		if subset(sel, d.Spec.Template.Labels) {
			matching = append(matching, d.Name)
		}
	}
	switch len(matching) {
	case 1:
		return matching[0], nil
	case 0:
		return "", fmt.Errorf("Service %q selects no Deployment of the manifests (selector %v)", svc.Name, sel)
	}
	return "", fmt.Errorf("Service %q selects the pods of several Deployments (%s); make its selector that of one Deployment", svc.Name, strings.Join(matching, ", "))
}

func subset(a, b map[string]string) bool {
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func equalMaps(a, b map[string]string) bool { return len(a) == len(b) && subset(a, b) }
