package manifest

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// clusterScoped lists the cluster-scoped kinds of Kubernetes' built-in API groups (and of the
// aggregation layer) by group and kind, so that a renderer can tell scopes apart without a cluster.
var clusterScoped = map[schema.GroupKind]bool{
	{Group: "", Kind: "Namespace"}:                                                    true,
	{Group: "", Kind: "Node"}:                                                         true,
	{Group: "", Kind: "PersistentVolume"}:                                             true,
	{Group: "", Kind: "ComponentStatus"}:                                              true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:                        true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 true,
	{Group: "policy", Kind: "PodSecurityPolicy"}:                                      true,
	{Group: "config.openshift.io", Kind: "ClusterOperator"}:                           true,
	{Group: "console.openshift.io", Kind: "ConsolePlugin"}:                            true,
	{Group: "console.openshift.io", Kind: "ConsoleYAMLSample"}:                        true,
	{Group: "console.openshift.io", Kind: "ConsoleQuickStart"}:                        true,
	{Group: "console.openshift.io", Kind: "ConsoleCLIDownload"}:                       true,
	{Group: "console.openshift.io", Kind: "ConsoleLink"}:                              true,
	{Group: "security.openshift.io", Kind: "SecurityContextConstraints"}:              true,
	{Group: "cert-manager.io", Kind: "ClusterIssuer"}:                                 true,
}

// Scoper tells whether a kind is namespaced. It answers from, in order: the CustomResourceDefinitions
// among the objects being rendered, the scopes gathered from the cluster (provisioner.Request.Scopes),
// and the built-in table above. Kinds it does not know are treated as namespaced.
type Scoper struct {
	crds    map[schema.GroupKind]bool // group/kind → namespaced
	cluster map[schema.GroupKind]bool
}

// NewScoper builds a Scoper from the objects of a bundle (their CRDs) and the scopes gathered from
// the cluster (nil: none).
func NewScoper(objs []*unstructured.Unstructured, cluster map[schema.GroupKind]bool) *Scoper {
	return &Scoper{crds: crdScopes(objs), cluster: cluster}
}

// crdScopes are the scopes the CRDs among objs give their kinds.
func crdScopes(objs []*unstructured.Unstructured) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}) {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		out[schema.GroupKind{Group: group, Kind: kind}] = scope != "Cluster"
	}
	return out
}

// Namespaced reports whether objects of gvk live in a namespace.
func (s *Scoper) Namespaced(gvk schema.GroupVersionKind) bool {
	if ns, ok := s.crds[gvk.GroupKind()]; ok {
		return ns
	}
	if ns, ok := s.cluster[gvk.GroupKind()]; ok {
		return ns
	}
	return !clusterScoped[gvk.GroupKind()]
}

// ClusterKinds lists the kinds of objs whose scope only the cluster can tell: those that no CRD among
// objs defines and that the built-in table does not name as cluster-scoped. Each kind is listed once,
// in the order of objs. A Renderer's Needs.Kinds gives them to the gathering step.
func ClusterKinds(objs []*unstructured.Unstructured) []schema.GroupVersionKind {
	crds := crdScopes(objs)
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if _, defined := crds[gvk.GroupKind()]; defined || clusterScoped[gvk.GroupKind()] || seen[gvk] {
			continue
		}
		seen[gvk] = true
		out = append(out, gvk)
	}
	return out
}
