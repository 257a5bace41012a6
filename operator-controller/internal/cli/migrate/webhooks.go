package migrate

import (
	"fmt"
	"sort"
	"strings"

	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// Why a webhook operator is not moved (yet). What OLM v0 leaves on the cluster for a CSV's
// spec.webhookdefinitions (operator-lifecycle-manager pkg/controller/install/certresources.go and
// webhook.go, cited in docs/migration.md), against what rukpak renders for the same bundle
// (rukpak/internal/provisioner/registryv1/webhooks.go, certs/):
//
//   - the serving certificate: OLM v0 signs it with a CA of its own, per CSV, and writes Secret
//     <deployment>-service-cert (annotation olmcahash); rukpak's certificate provider writes a
//     Secret of the same name signed by its CA;
//   - the pod template: OLM v0 mounts that Secret as volumes "webhook-cert"
//     (/tmp/k8s-webhook-server/serving-certs) and "apiservice-cert"
//     (/apiserver.local.config/certificates) and sets the template annotation olmcahash; rukpak
//     mounts it as "rukpak-webhook-cert" and "rukpak-apiservice-cert", without olmcahash. The pod
//     templates differ, so adopting the Deployment would roll out a new ReplicaSet;
//   - the webhook configurations: OLM v0 creates them with generateName "<generateName>-" (a random
//     suffix) and the label olm.webhook-description-generate-name; rukpak names them
//     "<generateName>", so both would exist (and both call the webhook) until OLM v0's is deleted.
//
// Adopting in place needs rukpak to render OLM v0's volume names and keep olmcahash (a change to
// rukpak's registry+v1 renderer), so migrate refuses and says what blocks and what to do.

// webhookBlockers reports the webhooks of csv (of package pkg) precisely: per Deployment, what OLM v0 runs and what
// OLM v1 would change; nil when csv has none.
func webhookBlockers(csv *v0.ClusterServiceVersion, pkg string) []string {
	if len(csv.Spec.WebhookDefinitions) == 0 {
		return nil
	}
	byDeployment := map[string][]string{}
	for _, w := range csv.Spec.WebhookDefinitions {
		what := string(w.Type) + " " + w.GenerateName
		switch w.Type {
		case v0.ValidatingAdmissionWebhook:
			what = fmt.Sprintf("ValidatingWebhookConfiguration %s-<suffix> (OLM v1 would add %s beside it)", w.GenerateName, w.GenerateName)
		case v0.MutatingAdmissionWebhook:
			what = fmt.Sprintf("MutatingWebhookConfiguration %s-<suffix> (OLM v1 would add %s beside it)", w.GenerateName, w.GenerateName)
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
	var parts []string
	for _, d := range deployments {
		parts = append(parts, fmt.Sprintf("Deployment %s serves %s; OLM v0 mounts Secret %s-service-cert (signed by OLM v0's CA) as volumes webhook-cert and apiservice-cert and sets the pod template annotation olmcahash, OLM v1 (rukpak) mounts it as rukpak-webhook-cert and rukpak-apiservice-cert without olmcahash, so adopting would change the pod template and replace the pods (a new ReplicaSet)",
			d, strings.Join(byDeployment[d], " and "), d))
	}
	return []string{fmt.Sprintf("CSV %s has webhooks that cannot be adopted without restarting the operator: %s. "+
		"What to do: keep it on OLM v0 (nothing was changed); or accept one restart of its pods: delete the Subscription and then the CSV (OLM v0 deletes the Deployment and webhook configurations but keeps CRDs and custom resources), "+
		"then install it with `kubectl olmv1 install %s` (an Operator with spec.collisionPolicy IfNoController adopts the CRDs it finds)",
		csv.Name, strings.Join(parts, "; "), pkg)}
}
