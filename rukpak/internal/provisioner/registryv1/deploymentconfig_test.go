package registryv1

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func typedDeployment(t *testing.T, r *rendered, name string) *appsv1.Deployment {
	t.Helper()
	return typedDeploymentIn(t, r, fixtureNS, name)
}

func typedDeploymentIn(t *testing.T, r *rendered, namespace, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(r.get("Deployment "+namespace+"/"+name).Object, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDeploymentConfigFromAPI(t *testing.T) {
	res := &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}
	aff := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}},
	}}}
	tol := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ops", Effect: corev1.TaintEffectNoSchedule}
	cfg := &rukpakv1alpha1.BundleConfig{DeploymentConfig: &rukpakv1alpha1.DeploymentConfig{
		Env:          []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}, {Name: "HTTP_PROXY", Value: "http://proxy:3128"}},
		Resources:    res,
		NodeSelector: map[string]string{"role": "infra"},
		Tolerations:  []corev1.Toleration{tol, tol},
		Affinity:     aff,
	}}
	r, err := renderFS(t, fixtureFS(t, nil), cfg, selfSigned)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"widget-operator", "widget-reporter"} {
		d := typedDeployment(t, r, name)
		pod := d.Spec.Template.Spec
		for _, c := range pod.Containers {
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			if env["HTTP_PROXY"] != "http://proxy:3128" || env["LOG_LEVEL"] != "debug" {
				t.Errorf("%s/%s env %v: want HTTP_PROXY added and LOG_LEVEL replaced", name, c.Name, c.Env)
			}
			if !reflect.DeepEqual(c.Resources, *res) {
				t.Errorf("%s/%s resources %v", name, c.Name, c.Resources)
			}
		}
		if !reflect.DeepEqual(pod.NodeSelector, map[string]string{"role": "infra"}) {
			t.Errorf("%s nodeSelector %v", name, pod.NodeSelector)
		}
		if len(pod.Tolerations) != 1 || pod.Tolerations[0] != tol {
			t.Errorf("%s tolerations %v, want the one toleration once", name, pod.Tolerations)
		}
		if !reflect.DeepEqual(pod.Affinity, aff) {
			t.Errorf("%s affinity %v", name, pod.Affinity)
		}
	}
	// LOG_LEVEL keeps its position; the WATCH_NAMESPACE downward-API variable is untouched.
	op := typedDeployment(t, r, "widget-operator").Spec.Template.Spec.Containers[0]
	if op.Env[0].Name != "WATCH_NAMESPACE" || op.Env[0].ValueFrom == nil || op.Env[1].Name != "LOG_LEVEL" || op.Env[2].Name != "HTTP_PROXY" {
		t.Errorf("manager env order/content %v", op.Env)
	}
}

func TestApplyOverridesAllFields(t *testing.T) {
	d := &appsv1.Deployment{}
	d.Annotations = map[string]string{"keep": "bundle"}
	d.Spec.Template.Annotations = map[string]string{"keep": "bundle"}
	d.Spec.Template.Spec = corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:         "c",
			EnvFrom:      []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "base"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "tmp", MountPath: "/tmp"}},
		}},
		Volumes:  []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{}},
	}
	cfg := &deploymentOverrides{
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "base"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}}},
		},
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc"}}},
			{Name: "trust", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}}}},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "trust", MountPath: "/etc/pki"}},
		Annotations:  map[string]string{"keep": "config", "added": "config"},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
			{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname"}},
		}}},
	}
	if err := applyOverrides(d, cfg); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if len(c.EnvFrom) != 2 || c.EnvFrom[1].SecretRef.Name != "extra" {
		t.Errorf("envFrom %v: want base once plus extra", c.EnvFrom)
	}
	if len(c.VolumeMounts) != 3 || c.VolumeMounts[2].Name != "trust" {
		t.Errorf("volumeMounts %v", c.VolumeMounts)
	}
	vols := d.Spec.Template.Spec.Volumes
	if len(vols) != 2 || vols[0].PersistentVolumeClaim == nil || vols[1].Name != "trust" {
		t.Errorf("volumes %v: want data replaced by the PVC and trust appended", vols)
	}
	if d.Annotations["keep"] != "bundle" || d.Annotations["added"] != "config" || d.Spec.Template.Annotations["added"] != "config" {
		t.Errorf("annotations %v / %v: config adds but never overrides", d.Annotations, d.Spec.Template.Annotations)
	}
	aff := d.Spec.Template.Spec.Affinity
	if aff.PodAffinity == nil || aff.PodAntiAffinity == nil {
		t.Errorf("affinity %v: podAffinity kept, podAntiAffinity set", aff)
	}
	if err := applyOverrides(d, &deploymentOverrides{Annotations: map[string]string{TargetNamespacesAnnotation: "x"}}); err == nil {
		t.Errorf("overriding %s must be refused", TargetNamespacesAnnotation)
	}
}
