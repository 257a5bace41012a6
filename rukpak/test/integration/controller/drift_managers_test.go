package controller

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Drift correction and other field managers. rukpak applies with server-side apply (field manager
// rukpak, forced), so a re-apply sets exactly the fields the bundle sets: fields only other
// managers set survive, fields the bundle sets are taken back.

// webNoReplicas is a Deployment whose bundle leaves replicas to others (an HPA, kubectl scale).
const webNoReplicas = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {tier: frontend}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: example.com/web:1}
`

// rolloutRestart patches the pod template as `kubectl rollout restart` does, as field manager
// kubectl-rollout.
func rolloutRestart(t *testing.T, ns, name, at string) {
	t.Helper()
	patch := `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"` + at + `"}}}}}`
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k8s.Patch(t.Context(), d, client.RawPatch(types.StrategicMergePatchType, []byte(patch)), client.FieldOwner("kubectl-rollout")); err != nil {
		t.Fatal(err)
	}
}

// scale sets replicas through the scale subresource, as an HPA does, as field manager hpa-controller.
func scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	s := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	if err := k8s.SubResource("scale").Update(t.Context(), d, client.WithSubResourceBody(s), client.FieldOwner("hpa-controller")); err != nil {
		t.Fatal(err)
	}
}

func getDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDriftKeepsOtherManagersFields: a `kubectl rollout restart` annotation, replicas set through
// the scale subresource and a label added by other managers survive drift correction, while a field
// the bundle sets (the container image), changed by another manager, is restored.
func TestDriftKeepsOtherManagersFields(t *testing.T) {
	const name = "drift-managers"
	writeBundle(t, "example.com/drift-managers:v1", map[string]string{"deploy.yaml": webNoReplicas})
	newBD(t, name, "example.com/drift-managers:v1")
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)

	restartedAt := time.Now().UTC().Format(time.RFC3339)
	rolloutRestart(t, name, "web", restartedAt)
	scale(t, name, "web", 3)
	// Another manager adds a label and changes the image the bundle sets.
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "web"}}
	patch := `{"metadata":{"labels":{"team":"payments"}},"spec":{"template":{"spec":{"containers":[{"name":"web","image":"example.com/web:hand-edited"}]}}}}`
	if err := k8s.Patch(t.Context(), d, client.RawPatch(types.StrategicMergePatchType, []byte(patch)), client.FieldOwner("intruder")); err != nil {
		t.Fatal(err)
	}

	// The image edit is drift: its watch event re-applies the revision.
	waitFor(t, "the bundle's image to be restored", func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: name, Name: "web"}, d); err != nil {
			return false, err
		}
		return d.Spec.Template.Spec.Containers[0].Image == "example.com/web:1", nil
	})
	d = getDeployment(t, name, "web")
	if got := d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"]; got != restartedAt {
		t.Errorf("the rollout restart annotation did not survive the re-apply: %q", got)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas set by another manager (the bundle sets none) did not survive: %v", d.Spec.Replicas)
	}
	if d.Labels["team"] != "payments" || d.Labels["tier"] != "frontend" {
		t.Errorf("labels: %v", d.Labels)
	}
	managers := map[string]bool{}
	for _, mf := range d.ManagedFields {
		managers[mf.Manager] = true
	}
	if !managers["rukpak"] || !managers["kubectl-rollout"] {
		t.Errorf("managers of the Deployment: %v", managers)
	}
	if bd := getBD(t, name); bd.Status.InstalledRevision != 1 {
		t.Errorf("drift correction must not create revisions: %d", bd.Status.InstalledRevision)
	}
}

// TestDriftRestoresReplicasTheBundleSets: when the bundle sets replicas, they are the bundle's: a
// scale by another manager is reverted (docs/rukpak.md: leave replicas out of the bundle to let an
// HPA own them).
func TestDriftRestoresReplicasTheBundleSets(t *testing.T) {
	const name = "drift-replicas"
	writeBundle(t, "example.com/drift-replicas:v1", map[string]string{"deploy.yaml": deployment}) // replicas: 1
	newBD(t, name, "example.com/drift-replicas:v1")
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	scale(t, name, "web", 4)
	waitFor(t, "replicas to be restored to the bundle's 1", func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: name, Name: "web"}, d); err != nil {
			return false, err
		}
		return d.Spec.Replicas != nil && *d.Spec.Replicas == 1, nil
	})
}
