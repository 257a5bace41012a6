package bundlegen

import (
	"sort"

	"github.com/olmv1/olmv1/rukpak/pkg/registryv1kinds"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// supportedKinds are the kinds, besides the CSV and CRDs, that a registry+v1 bundle may carry in
// manifests/ (one list for the renderer and bundle generate).
var supportedKinds = registryv1kinds.Supported

// Kinds with a meaning of their own in plain manifests, which generate turns into CSV content.
var (
	deploymentKind         = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	serviceAccountKind     = schema.GroupKind{Kind: "ServiceAccount"}
	serviceKind            = schema.GroupKind{Kind: "Service"}
	namespaceKind          = schema.GroupKind{Kind: "Namespace"}
	crdKind                = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	csvKind                = schema.GroupKind{Group: "operators.coreos.com", Kind: "ClusterServiceVersion"}
	roleKind               = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "Role"}
	clusterRoleKind        = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}
	roleBindingKind        = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}
	clusterRoleBindingKind = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}
	validatingKind         = schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}
	mutatingKind           = schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}
	// cert-manager objects that serve webhooks in kubebuilder projects: rukpak provides webhook
	// certificates itself, so they are dropped with a warning.
	certManagerGroup = "cert-manager.io"
)

// SupportedKinds lists the kinds generate copies into manifests/ as they are, sorted.
func SupportedKinds() []string {
	out := make([]string, 0, len(supportedKinds))
	for gk := range supportedKinds {
		out = append(out, gk.Kind)
	}
	sort.Strings(out)
	return out
}
