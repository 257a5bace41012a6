package controller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

func annotated(d *appsv1.Deployment, a map[string]string) *appsv1.Deployment {
	d.Annotations = a
	return d
}

func TestStatusOnly(t *testing.T) {
	dep := func(gen int64, labels map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Generation: gen, Labels: labels}}
	}
	for _, tc := range []struct {
		name     string
		old, new client.Object
		want     bool
	}{
		{"status changed", dep(2, nil), dep(2, nil), true},
		{"spec changed (generation)", dep(2, nil), dep(3, nil), false},
		{"labels changed", dep(2, nil), dep(2, map[string]string{"a": "b"}), false},
		{"kind without generation", &corev1.ConfigMap{}, &corev1.ConfigMap{}, false},
		{"the Deployment controller's revision", annotated(dep(2, nil), nil), annotated(dep(2, nil), map[string]string{deploymentRevisionAnnotation: "1"}), true},
		{"the revision moved", annotated(dep(2, nil), map[string]string{deploymentRevisionAnnotation: "1", "a": "b"}), annotated(dep(2, nil), map[string]string{deploymentRevisionAnnotation: "2", "a": "b"}), true},
		{"another annotation with it", annotated(dep(2, nil), nil), annotated(dep(2, nil), map[string]string{deploymentRevisionAnnotation: "1", "a": "b"}), false},
		{"another annotation changed", annotated(dep(2, nil), map[string]string{"a": "b"}), annotated(dep(2, nil), map[string]string{"a": "c"}), false},
		{"another annotation removed", annotated(dep(2, nil), map[string]string{"a": "b"}), annotated(dep(2, nil), map[string]string{deploymentRevisionAnnotation: "1"}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := statusOnly(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("statusOnly = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTriggersHealthOnlyUntilAnyOtherEvent(t *testing.T) {
	tr := &triggers{pending: map[string]bool{}}
	if tr.take("a") {
		t.Error("a reconcile without a noted event (BundleDeployment change, re-check) must apply")
	}
	tr.note("a", true)
	tr.note("a", true)
	if !tr.take("a") {
		t.Error("status changes alone ask for a health check only")
	}
	if tr.take("a") {
		t.Error("take must forget the events it returned")
	}
	tr.note("a", true)
	tr.note("a", false) // drift
	tr.note("a", true)
	if tr.take("a") {
		t.Error("a drift event among status changes must make the reconcile apply")
	}
	var none *triggers
	if none.take("a") {
		t.Error("without triggers every reconcile applies")
	}
}

// TestEchoesOfOwnAppliesAreHealthOnly: a change of an applied object that is rukpak's own apply
// (own says so when the BundleDeployment is reconciled) asks for a health check only; one that is not,
// any drift beside it, or no way to tell (own nil) asks for an apply.
func TestEchoesOfOwnAppliesAreHealthOnly(t *testing.T) {
	k := apply.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "d"}
	ownRV := map[apply.ObjectKey]string{}
	own := func(key apply.ObjectKey, rv string) bool {
		want, ok := ownRV[key]
		delete(ownRV, key)
		return ok && want == rv
	}
	tr := &triggers{pending: map[string]bool{}, own: own}

	ownRV[k] = "5"
	tr.noteEcho("a", k, "5")
	if !tr.take("a") {
		t.Error("the echo of rukpak's own apply asks for a health check only")
	}
	tr.noteEcho("a", k, "6")
	if tr.take("a") {
		t.Error("a change rukpak did not write is drift")
	}
	ownRV[k] = "7"
	tr.noteEcho("a", k, "7")
	tr.noteEcho("a", k, "8")
	if tr.take("a") {
		t.Error("a change after rukpak's own write is drift")
	}
	ownRV[k] = "9"
	tr.noteEcho("a", k, "9")
	tr.note("a", false)
	if tr.take("a") {
		t.Error("drift beside an echo must apply")
	}
	if tr.take("a") {
		t.Error("take must forget the echoes it returned")
	}

	blind := &triggers{pending: map[string]bool{}}
	blind.noteEcho("a", k, "9")
	if blind.take("a") {
		t.Error("without a way to tell rukpak's writes, every change is drift")
	}
}

// Creations of the kinds health looks at pass (the initial list of a watch started after a restart
// may be the only event saying a Deployment became ready); others are rukpak's own applies.
func TestAppliedChangedPassesCreationsOfHealthKinds(t *testing.T) {
	obj := func(apiVersion, kind string) client.Object {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		return u
	}
	for _, tc := range []struct {
		obj  client.Object
		want bool
	}{
		{obj("apps/v1", "Deployment"), true},
		{obj("apiextensions.k8s.io/v1", "CustomResourceDefinition"), true},
		{obj("v1", "ConfigMap"), false},
		{obj("rbac.authorization.k8s.io/v1", "ClusterRole"), false},
	} {
		if got := (appliedChanged{}).Create(event.CreateEvent{Object: tc.obj}); got != tc.want {
			t.Errorf("%s: Create = %v, want %v", tc.obj.GetObjectKind().GroupVersionKind().Kind, got, tc.want)
		}
	}
}
