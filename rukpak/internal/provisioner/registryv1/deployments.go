package registryv1

import (
	"fmt"
	"reflect"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Annotations set on every Deployment and its pod template, as OLM v0 does (it copies them from the
// CSV, which its OperatorGroup annotates). Operators read them through the downward API, e.g.
// WATCH_NAMESPACE from metadata.annotations['olm.targetNamespaces'] and OPERATOR_NAMESPACE from
// metadata.annotations['olm.operatorNamespace'].
const (
	// TargetNamespacesAnnotation holds the watched namespaces, comma-joined ("" means all).
	TargetNamespacesAnnotation = "olm.targetNamespaces"
	// OperatorNamespaceAnnotation holds the install namespace.
	OperatorNamespaceAnnotation = "olm.operatorNamespace"
)

// revisionHistoryLimit is what OLM v0 sets on every Deployment it creates for a CSV (and what
// upstream OLM v1 copies): old ReplicaSets of an operator are of no use.
const revisionHistoryLimit = int32(1)

// droppedCSVAnnotations are CSV annotations that OLM does not copy onto the operator's pods.
var droppedCSVAnnotations = map[string]bool{
	"kubectl.kubernetes.io/last-applied-configuration": true,
	"operatorframework.io/properties":                  true,
	"olm.operatorGroup":                                true,
	"olm.operatorNamespace":                            true,
	"olm.targetNamespaces":                             true,
}

// deploymentOverrides is the deploymentConfig of a BundleDeployment. It mirrors OLM v0's
// Subscription.spec.config; fields the API does not carry yet stay empty.
type deploymentOverrides struct {
	Env          []corev1.EnvVar
	EnvFrom      []corev1.EnvFromSource
	Resources    *corev1.ResourceRequirements
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	Affinity     *corev1.Affinity
	Volumes      []corev1.Volume
	VolumeMounts []corev1.VolumeMount
	Annotations  map[string]string
}

func overridesFromAPI(c *rukpakv1alpha1.DeploymentConfig) *deploymentOverrides {
	if c == nil {
		return nil
	}
	return &deploymentOverrides{
		Env:          c.Env,
		Resources:    c.Resources,
		NodeSelector: c.NodeSelector,
		Tolerations:  c.Tolerations,
		Affinity:     c.Affinity,
		EnvFrom:      c.EnvFrom,
		Volumes:      c.Volumes,
		VolumeMounts: c.VolumeMounts,
		Annotations:  c.Annotations,
	}
}

// buildDeployments turns the CSV's install strategy into Deployments in installNamespace.
//
// With olmv0 set (spec.config.olmv0), a Deployment that serves webhooks or APIServices gets the pod
// template annotations OLM v0 gave it: its own (the bundle's) are dropped, olmcahash is set to
// olmv0.caHash when given, and the CSV's annotations follow; see mountServingCertOLMv0 for its volumes.
func buildDeployments(csv *operatorsv1alpha1.ClusterServiceVersion, installNamespace string, mode InstallMode, cfg *deploymentOverrides,
	olmv0 *rukpakv1alpha1.OLMv0Rendering) ([]*appsv1.Deployment, error) {
	if csv.Spec.InstallStrategy.StrategyName != "" && csv.Spec.InstallStrategy.StrategyName != operatorsv1alpha1.InstallStrategyNameDeployment {
		return nil, fmt.Errorf("ClusterServiceVersion %q: spec.install.strategy %q is not supported; only %q is",
			csv.Name, csv.Spec.InstallStrategy.StrategyName, operatorsv1alpha1.InstallStrategyNameDeployment)
	}
	specs := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(specs) == 0 {
		// A composite (meta) package: the bundle brings CRDs and manifests and requires other
		// packages, with no operator of its own to run.
		return nil, nil
	}
	servesCerts := map[string]bool{}
	if olmv0 != nil {
		for _, w := range csv.Spec.WebhookDefinitions {
			servesCerts[w.DeploymentName] = true
		}
		for _, a := range csv.Spec.APIServiceDefinitions.Owned {
			servesCerts[a.DeploymentName] = true
		}
	}
	seen := map[string]bool{}
	out := make([]*appsv1.Deployment, 0, len(specs))
	for i, s := range specs {
		if s.Name == "" {
			return nil, fmt.Errorf("ClusterServiceVersion %q: spec.install.spec.deployments[%d] has no name", csv.Name, i)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("ClusterServiceVersion %q: deployment %q is declared twice in spec.install.spec.deployments", csv.Name, s.Name)
		}
		seen[s.Name] = true
		d := &appsv1.Deployment{}
		d.Name = s.Name
		d.Namespace = installNamespace
		d.Labels = copyMap(s.Label)
		d.Spec = *s.Spec.DeepCopy()

		tmpl := &d.Spec.Template
		podAnnotations := map[string]string{}
		if servesCerts[s.Name] && olmv0.CAHash != "" {
			podAnnotations[OLMCAHashAnnotation] = olmv0.CAHash
		}
		for k, v := range csv.Annotations {
			if !droppedCSVAnnotations[k] {
				podAnnotations[k] = v
			}
		}
		if !servesCerts[s.Name] {
			for k, v := range tmpl.Annotations {
				podAnnotations[k] = v
			}
		}
		olmAnnotations := map[string]string{
			TargetNamespacesAnnotation:  mode.TargetNamespacesAnnotation(),
			OperatorNamespaceAnnotation: installNamespace,
		}
		for k, v := range olmAnnotations {
			podAnnotations[k] = v
		}
		tmpl.Annotations = podAnnotations
		d.Annotations = olmAnnotations
		limit := revisionHistoryLimit
		d.Spec.RevisionHistoryLimit = &limit

		if err := applyOverrides(d, cfg); err != nil {
			return nil, fmt.Errorf("deploymentConfig for deployment %q: %w", d.Name, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// applyOverrides merges deploymentConfig into one Deployment with OLM v0 Subscription.spec.config
// semantics: env replaces variables of the same name and appends others; envFrom, tolerations are
// appended (without duplicates); resources replace every container's; nodeSelector replaces;
// affinity replaces the node/pod/podAnti affinity it sets, and an empty one ({}) clears the pod's
// affinity or that part of it; volumes and volumeMounts replace entries of
// the same name and append others; annotations are added to the Deployment and its pods without
// overriding what the bundle sets.
func applyOverrides(d *appsv1.Deployment, c *deploymentOverrides) error {
	if c == nil {
		return nil
	}
	pod := &d.Spec.Template.Spec
	for i := range pod.Containers {
		ctr := &pod.Containers[i]
		ctr.Env = mergeEnv(ctr.Env, c.Env)
		ctr.EnvFrom = appendUnique(ctr.EnvFrom, c.EnvFrom)
		if c.Resources != nil {
			ctr.Resources = *c.Resources.DeepCopy()
		}
		ctr.VolumeMounts = mergeByName(ctr.VolumeMounts, c.VolumeMounts, func(m corev1.VolumeMount) string { return m.Name })
	}
	if c.NodeSelector != nil {
		pod.NodeSelector = copyMap(c.NodeSelector)
	}
	pod.Tolerations = appendUnique(pod.Tolerations, c.Tolerations)
	pod.Affinity = overrideAffinity(pod.Affinity, c.Affinity)
	pod.Volumes = mergeByName(pod.Volumes, c.Volumes, func(v corev1.Volume) string { return v.Name })
	for k, v := range c.Annotations {
		switch k {
		case TargetNamespacesAnnotation:
			return fmt.Errorf("annotation %q is set by rukpak from watchNamespaces and cannot be overridden", k)
		case OperatorNamespaceAnnotation:
			return fmt.Errorf("annotation %q is set by rukpak to the install namespace and cannot be overridden", k)
		}
		if _, ok := d.Annotations[k]; !ok {
			d.Annotations[k] = v
		}
		if _, ok := d.Spec.Template.Annotations[k]; !ok {
			d.Spec.Template.Annotations[k] = v
		}
	}
	return nil
}

// overrideAffinity applies deploymentConfig.affinity with OLM v0 semantics: nil keeps the bundle's
// affinity; an empty affinity ({}) removes it; otherwise each of nodeAffinity, podAffinity and
// podAntiAffinity that is set replaces the bundle's, and an empty one ({}) removes the bundle's. An
// affinity left with no part is removed.
func overrideAffinity(have, override *corev1.Affinity) *corev1.Affinity {
	if override == nil {
		return have
	}
	if equality.Semantic.DeepEqual(*override, corev1.Affinity{}) {
		return nil
	}
	out := &corev1.Affinity{}
	if have != nil {
		out = have.DeepCopy()
	}
	if a := override.NodeAffinity; a != nil {
		out.NodeAffinity = a.DeepCopy()
		if equality.Semantic.DeepEqual(*a, corev1.NodeAffinity{}) {
			out.NodeAffinity = nil
		}
	}
	if a := override.PodAffinity; a != nil {
		out.PodAffinity = a.DeepCopy()
		if equality.Semantic.DeepEqual(*a, corev1.PodAffinity{}) {
			out.PodAffinity = nil
		}
	}
	if a := override.PodAntiAffinity; a != nil {
		out.PodAntiAffinity = a.DeepCopy()
		if equality.Semantic.DeepEqual(*a, corev1.PodAntiAffinity{}) {
			out.PodAntiAffinity = nil
		}
	}
	if equality.Semantic.DeepEqual(*out, corev1.Affinity{}) {
		return nil
	}
	return out
}

func mergeEnv(have, add []corev1.EnvVar) []corev1.EnvVar {
	return mergeByName(have, add, func(e corev1.EnvVar) string { return e.Name })
}

// mergeByName replaces the entries of have whose name is in add, keeping their position, and
// appends the rest of add in order.
func mergeByName[T any](have, add []T, name func(T) string) []T {
	if len(add) == 0 {
		return have
	}
	idx := map[string]int{}
	out := append([]T(nil), have...)
	for i, h := range out {
		idx[name(h)] = i
	}
	for _, a := range add {
		if i, ok := idx[name(a)]; ok {
			out[i] = a
			continue
		}
		idx[name(a)] = len(out)
		out = append(out, a)
	}
	return out
}

func appendUnique[T any](have, add []T) []T {
	if len(add) == 0 {
		return have
	}
	out := append([]T(nil), have...)
next:
	for _, a := range add {
		for _, h := range out {
			if reflect.DeepEqual(a, h) {
				continue next
			}
		}
		out = append(out, a)
	}
	return out
}

func copyMap(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
