// Package registryv1kinds names the kinds a registry+v1 bundle may carry in manifests/ besides its
// ClusterServiceVersion and CustomResourceDefinitions (the kinds OLM v0 installs from a bundle): the
// renderer refuses others, and bundle generate copies only these.
package registryv1kinds

import "k8s.io/apimachinery/pkg/runtime/schema"

// Supported is the set of those kinds.
var Supported = map[schema.GroupKind]bool{
	{Group: "", Kind: "Secret"}:                                      true,
	{Group: "", Kind: "ConfigMap"}:                                   true,
	{Group: "", Kind: "Service"}:                                     true,
	{Group: "", Kind: "ServiceAccount"}:                              true,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:               true,
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
	{Group: "monitoring.coreos.com", Kind: "PrometheusRule"}:         true,
	{Group: "monitoring.coreos.com", Kind: "ServiceMonitor"}:         true,
	{Group: "monitoring.coreos.com", Kind: "PodMonitor"}:             true,
	{Group: "policy", Kind: "PodDisruptionBudget"}:                   true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:              true,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:              true,
	{Group: "autoscaling.k8s.io", Kind: "VerticalPodAutoscaler"}:     true,
	{Group: "console.openshift.io", Kind: "ConsoleYAMLSample"}:       true,
	{Group: "console.openshift.io", Kind: "ConsoleQuickStart"}:       true,
	{Group: "console.openshift.io", Kind: "ConsoleCLIDownload"}:      true,
	{Group: "console.openshift.io", Kind: "ConsoleLink"}:             true,
	{Group: "console.openshift.io", Kind: "ConsolePlugin"}:           true,
}
