package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

// install --wait stops as soon as the Operator reports the BundleDeployment's failure (e.g. an
// object it may not take), with the reason and the message; waiting states keep it waiting.
func TestWaitInstalledStopsOnFailure(t *testing.T) {
	s, err := scheme()
	if err != nil {
		t.Fatal(err)
	}
	conflict := `BundleDeployment "op": Deployment "ns/op" already exists and is not managed by OLM`
	for _, tc := range []struct {
		reason, msg string
		status      metav1.ConditionStatus
		generation  int64 // of the condition; the Operator's is 2
		wantFast    bool
	}{
		{"ObjectConflict", conflict, metav1.ConditionFalse, 2, true},
		{"UnpackFailed", `BundleDeployment "op": image not found`, metav1.ConditionFalse, 2, true},
		{"ObjectConflict", conflict, metav1.ConditionFalse, 1, false}, // the previous generation's
		{operatorsv1alpha1.ReasonInstallationPending, "waiting", metav1.ConditionFalse, 2, false},
		{operatorsv1alpha1.ReasonInstallationFailed, "updating BundleDeployment: conflict", metav1.ConditionFalse, 2, false},
		{operatorsv1alpha1.ReasonInstallationStatusUnknown, "waiting", metav1.ConditionUnknown, 2, false},
	} {
		op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", Generation: 2}}
		op.Status.Conditions = []metav1.Condition{{Type: operatorsv1alpha1.TypeInstalled, Status: tc.status, Reason: tc.reason,
			Message: tc.msg, ObservedGeneration: tc.generation, LastTransitionTime: metav1.Now()}}
		c := fake.NewClientBuilder().WithScheme(s).WithObjects(op).WithStatusSubresource(op).Build()
		o := &options{Streams: Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, pollInterval: 10 * time.Millisecond}
		timeout := 500 * time.Millisecond
		if tc.wantFast {
			timeout = time.Minute
		}
		start := time.Now()
		_, err := o.waitInstalled(context.Background(), c, "op", timeout, "")
		took := time.Since(start)
		switch {
		case err == nil:
			t.Errorf("%s (generation %d): the wait succeeded", tc.reason, tc.generation)
		case tc.wantFast && (took > 10*time.Second || !strings.Contains(err.Error(), "reason "+tc.reason+": "+tc.msg)):
			t.Errorf("%s: want an immediate error with the reason and message, got after %v: %v", tc.reason, took, err)
		case !tc.wantFast && !strings.Contains(err.Error(), "timed out"):
			t.Errorf("%s (generation %d): want the wait to go on until the timeout, got %v", tc.reason, tc.generation, err)
		}
	}
}
