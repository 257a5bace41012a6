package controller

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// eventDriven bounds the waits that must be answered by a watch event: well under the controller's
// 30 s re-check of unhealthy BundleDeployments, so passing them shows the watch did it.
const eventDriven = 15 * time.Second

// waitHealthy waits up to within for Healthy=True.
func waitHealthy(t *testing.T, name string, within time.Duration) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		bd := &rukpakv1alpha1.BundleDeployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeHealthy)
		if c == nil {
			return false, nil
		}
		last = c.Reason + ": " + c.Message
		return c.Status == metav1.ConditionTrue, nil
	})
	if err != nil {
		t.Fatalf("BundleDeployment %s is not Healthy within %v; last: %s", name, within, last)
	}
}

// TestEndpointSliceWatchMakesWebhookHealthy: a webhook Service without endpoints keeps its
// BundleDeployment unhealthy; an EndpointSlice with a ready endpoint, labelled as the EndpointSlice
// controller labels it (the Service's labels, i.e. rukpak's owner labels, plus the service name),
// makes it Healthy through the EndpointSlice watch, with no other change.
func TestEndpointSliceWatchMakesWebhookHealthy(t *testing.T) {
	const name = "webhook-watch"
	service := "apiVersion: v1\nkind: Service\nmetadata:\n  name: hook\nspec:\n  ports:\n  - port: 443\n  selector: {app: hook}\n"
	// The rules match a resource nobody creates, so the API server never calls the webhook.
	vwc := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: webhook-watch.example.com
webhooks:
- name: check.webhook-watch.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  clientConfig:
    service: {namespace: webhook-watch, name: hook, port: 443}
  rules:
  - {apiGroups: [example.invalid], apiVersions: [v1], operations: [CREATE], resources: [nothings]}
`
	writeBundle(t, "example.com/webhook-watch:v1", map[string]string{"svc.yaml": service, "vwc.yaml": vwc})
	newBD(t, name, "example.com/webhook-watch:v1")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionFalse, rukpakv1alpha1.ReasonUnhealthy)
	if c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeHealthy); !strings.Contains(c.Message, "Service webhook-watch/hook") {
		t.Fatalf("Healthy message %q does not name the Service", c.Message)
	}

	svc := &corev1.Service{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "hook"}, svc); err != nil {
		t.Fatal(err)
	}
	labels := maps.Clone(svc.Labels)
	labels[discoveryv1.LabelServiceName] = "hook"
	labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
	ready := true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "hook-abcde", Namespace: name, Labels: labels},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}
	if err := k8s.Create(t.Context(), slice); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, name, eventDriven)

	// The endpoint turning unready makes it unhealthy again, also through the watch.
	notReady := false
	slice.Endpoints[0].Conditions.Ready = &notReady
	if err := k8s.Update(t.Context(), slice); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, eventDriven, true, func(ctx context.Context) (bool, error) {
		got := &rukpakv1alpha1.BundleDeployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			return false, err
		}
		return meta.IsStatusConditionFalse(got.Status.Conditions, rukpakv1alpha1.TypeHealthy), nil
	})
	if err != nil {
		t.Fatalf("an unready endpoint did not make the BundleDeployment unhealthy within %v", eventDriven)
	}
}

// TestPersistentVolumeClaimHealth: a PVC that is not Bound keeps its BundleDeployment unhealthy and
// says so; once it is Bound (envtest has no volume controller: the test sets the phase), it is
// Healthy, through the watch of applied objects' status.
func TestPersistentVolumeClaimHealth(t *testing.T) {
	const name = "pvc-health"
	pvc := "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests: {storage: 1Gi}\n"
	writeBundle(t, "example.com/pvc-health:v1", map[string]string{"pvc.yaml": pvc})
	newBD(t, name, "example.com/pvc-health:v1")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionFalse, rukpakv1alpha1.ReasonUnhealthy)
	if c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeHealthy); !strings.Contains(c.Message, "PersistentVolumeClaim pvc-health/data is not ready: phase Pending, not Bound") {
		t.Fatalf("Healthy message %q does not name the PVC and its phase", c.Message)
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "data"}, claim); err != nil {
		t.Fatal(err)
	}
	claim.Status.Phase = corev1.ClaimBound
	if err := k8s.Status().Update(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, name, eventDriven)
}
