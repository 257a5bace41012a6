package migrate

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// How a webhook operator is moved in place. What OLM v0 leaves on the cluster for a CSV's
// spec.webhookdefinitions (operator-lifecycle-manager pkg/controller/install/certresources.go and
// webhook.go, cited in docs/migration.md), and what OLM v1 does with each:
//
//   - the pod template: OLM v0 mounts the serving Secret <deployment>-service-cert as volumes
//     "apiservice-cert" (/apiserver.local.config/certificates) and "webhook-cert"
//     (/tmp/k8s-webhook-server/serving-certs), replaces the template annotations by olmcahash, then
//     adds the CSV's. The Operator gets spec.config.olmv0: rukpak renders the same volumes in the
//     same order, drops the bundle's own template annotations as OLM v0 did, and keeps olmcahash
//     from olmv0.caHash, so the template, and the pods, stay;
//   - the serving certificate: OLM v0 signed it with a CA of its own, which it does not keep; OLM v1
//     adopts the Secret (same name) and writes a certificate signed by its CA. The kubelet refreshes
//     the mounted files within its sync period, and a webhook server that reloads its certificate
//     from disk (controller-runtime's does) serves the new one without a restart; meanwhile OLM v1's
//     webhook configurations trust OLM v0's CA too (spec.config.olmv0.caBundle, from the caBundle
//     OLM v0 wrote into its configurations and CRDs);
//   - the webhook configurations: OLM v0's are named "<generateName>-<random suffix>", OLM v1's
//     "<generateName>"; OLM v1's are created beside OLM v0's, which are deleted once OLM v1 owns the
//     operator (supersededKinds). Conversion webhooks are set on the CRDs, which are adopted.

// webhookNotes says, per Deployment serving webhooks, what the move changes and what it does not
// (nil when csv has none).
func webhookNotes(csv *v0.ClusterServiceVersion) []string {
	if len(csv.Spec.WebhookDefinitions) == 0 {
		return nil
	}
	byDeployment := map[string][]string{}
	for _, w := range csv.Spec.WebhookDefinitions {
		what := string(w.Type) + " " + w.GenerateName
		switch w.Type {
		case v0.ValidatingAdmissionWebhook:
			what = fmt.Sprintf("ValidatingWebhookConfiguration %s (OLM v0's %s-<suffix> is deleted)", w.GenerateName, w.GenerateName)
		case v0.MutatingAdmissionWebhook:
			what = fmt.Sprintf("MutatingWebhookConfiguration %s (OLM v0's %s-<suffix> is deleted)", w.GenerateName, w.GenerateName)
		case v0.ConversionWebhook:
			what = fmt.Sprintf("conversion webhook %s of CRDs %s", w.GenerateName, strings.Join(w.ConversionCRDs, ", "))
		}
		byDeployment[w.DeploymentName] = append(byDeployment[w.DeploymentName], what)
	}
	deployments := make([]string, 0, len(byDeployment))
	for d := range byDeployment {
		deployments = append(deployments, d)
	}
	sort.Strings(deployments)
	var out []string
	for _, d := range deployments {
		out = append(out, fmt.Sprintf("webhooks of Deployment %s: %s; its pod template stays (spec.config.olmv0: OLM v0's volumes apiservice-cert and webhook-cert, and olmcahash, kept), "+
			"OLM v1 re-signs Secret %s-service-cert with its own CA and trusts OLM v0's CA too until the kubelet has refreshed the mounted certificate (about a minute); "+
			"if the operator does not reload its certificate from disk, restart it after the move (kubectl rollout restart deployment/%s)",
			d, strings.Join(byDeployment[d], ", "), d, d))
	}
	return out
}

// liveCAHash is the olmcahash annotation of the running pod templates of the CSV's webhook
// Deployments ("" when none carries one, or they disagree: the render then differs from the running
// template, which blocks the move).
func liveCAHash(st *V0) string {
	serving := map[string]bool{}
	for _, w := range st.CSV.Spec.WebhookDefinitions {
		serving[w.DeploymentName] = true
	}
	hash := ""
	for _, u := range st.Marked {
		if u.GetKind() != "Deployment" || u.GetNamespace() != st.CSV.Namespace || !serving[u.GetName()] {
			continue
		}
		a, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "annotations")
		switch h := a["olmcahash"]; {
		case h == "":
		case hash == "":
			hash = h
		case hash != h:
			return ""
		}
	}
	return hash
}

// liveCABundle is the CAs the API server trusts today for the operator's webhooks: the caBundle of
// OLM v0's webhook configurations and of the conversion webhooks of its CRDs, each CA once
// (spec.config.olmv0.caBundle keeps them trusted until the pods serve OLM v1's certificate).
func liveCABundle(st *V0) []byte {
	var out []byte
	seen := map[string]bool{}
	add := func(b64 string) {
		pem, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(pem) == 0 || seen[string(pem)] {
			return
		}
		seen[string(pem)] = true
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		out = append(out, pem...)
	}
	for _, u := range st.Marked {
		switch u.GetKind() {
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for _, h := range hooks {
				if hm, ok := h.(map[string]any); ok {
					ca, _, _ := unstructured.NestedString(hm, "clientConfig", "caBundle")
					add(ca)
				}
			}
		case "CustomResourceDefinition":
			ca, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
			add(ca)
		}
	}
	return out
}
