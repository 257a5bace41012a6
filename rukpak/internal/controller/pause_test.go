package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// A pause gives the Event the shared policy gives a Paused transition on Catalogs and Operators too
// (Normal Paused "Paused=True: paused since …"), once.
func TestPauseRecordsThePausedTransition(t *testing.T) {
	bd := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 2}, Spec: rukpakv1alpha1.BundleDeploymentSpec{Paused: true}}
	bd.Status.Conditions = []metav1.Condition{{Type: rukpakv1alpha1.TypePaused, Status: metav1.ConditionFalse, Reason: rukpakv1alpha1.ReasonNotPaused, Message: "not paused"}}
	scheme := runtime.NewScheme()
	if err := rukpakv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(10)
	r := &BundleDeploymentReconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(bd).WithStatusSubresource(bd).Build(), Recorder: rec}
	if _, err := r.reconcilePaused(t.Context(), bd); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-rec.Events:
		if !strings.HasPrefix(got, "Normal Paused Paused=True: paused since ") {
			t.Errorf("event %q, want the policy's Paused transition", got)
		}
	default:
		t.Fatal("no event for the pause")
	}
	if _, err := r.reconcilePaused(t.Context(), bd); err != nil {
		t.Fatal(err)
	}
	if len(rec.Events) != 0 {
		t.Errorf("a pause that goes on gave another event: %q", <-rec.Events)
	}
}
