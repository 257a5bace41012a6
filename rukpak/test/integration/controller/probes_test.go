package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// probesCRD defines a namespaced Widget with a status subresource, as operators' CRDs do.
const probesCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.probes.example.com
spec:
  group: probes.example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

func widgetReadyProbe() rukpakv1alpha1.ProgressionProbe {
	return rukpakv1alpha1.ProgressionProbe{
		Name:     "widget-ready",
		Selector: rukpakv1alpha1.ProbeSelector{Group: "probes.example.com", Kind: "Widget"},
		Assertions: []rukpakv1alpha1.ProbeAssertion{{
			Type:       rukpakv1alpha1.ProbeAssertionFieldValue,
			FieldValue: &rukpakv1alpha1.FieldValueAssertion{FieldPath: ".status.phase", Value: "Ready"},
		}},
	}
}

// newProbedBD is newBD with progression probes from the start.
func newProbedBD(t *testing.T, name, ref string, probes ...rukpakv1alpha1.ProgressionProbe) {
	t.Helper()
	ctx := t.Context()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	bd := &rukpakv1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: rukpakv1alpha1.BundleDeploymentSpec{
			ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain,
			InstallNamespace:     name,
			Source:               rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: ref}},
			ProgressionProbes:    probes,
		},
	}
	if err := k8s.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
}

// setWidgetPhase writes the Widget's status.phase through the status subresource, as its operator
// would.
func setWidgetPhase(t *testing.T, ns, name, phase string) {
	t.Helper()
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(schema.GroupVersionKind{Group: "probes.example.com", Version: "v1", Kind: "Widget"})
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(w.Object, phase, "status", "phase"); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Status().Update(t.Context(), w); err != nil {
		t.Fatal(err)
	}
}

// waitHealthyMessage waits, at most eventDriven (so a watch event must have done it), until Healthy
// is False with reason and a message containing want.
func waitHealthyMessage(t *testing.T, name, reason, want string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, eventDriven, true, func(ctx context.Context) (bool, error) {
		bd := &rukpakv1alpha1.BundleDeployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeHealthy)
		if c == nil {
			return false, nil
		}
		last = string(c.Status) + "/" + c.Reason + ": " + c.Message
		return c.Status == metav1.ConditionFalse && c.Reason == reason && strings.Contains(c.Message, want), nil
	})
	if err != nil {
		t.Fatalf("BundleDeployment %s: Healthy never became False/%s with %q within %v; last: %s", name, reason, want, eventDriven, last)
	}
}

// TestProgressionProbeGatesHealthy: a plain bundle with a CRD and a custom resource whose status
// reports readiness; a progression probe on the resource's .status.phase keeps Healthy False
// (reason ProgressionProbeWaiting, naming the probe, the object and the value observed) until the
// resource says Ready, and the status updates are seen through the watch of applied objects (well
// within the 30 s re-check).
func TestProgressionProbeGatesHealthy(t *testing.T) {
	const name = "probe-widget"
	widget := "apiVersion: probes.example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec: {size: 1}\n"
	writeBundle(t, "example.com/probe-widget:v1", map[string]string{"crd.yaml": probesCRD, "widget.yaml": widget})
	newProbedBD(t, name, "example.com/probe-widget:v1", widgetReadyProbe())

	bd := waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionFalse, rukpakv1alpha1.ReasonProgressionProbeWaiting)
	if c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeHealthy); c.Message !=
		`progression probe "widget-ready" waits on Widget probe-widget/w1: .status.phase is not set, want "Ready"` {
		t.Fatalf("Healthy message: %q", c.Message)
	}
	if !meta.IsStatusConditionTrue(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled) {
		t.Fatalf("the bundle should be installed while its probe waits: %+v", bd.Status.Conditions)
	}

	setWidgetPhase(t, name, "w1", "Provisioning")
	waitHealthyMessage(t, name, rukpakv1alpha1.ReasonProgressionProbeWaiting,
		`progression probe "widget-ready" waits on Widget probe-widget/w1: .status.phase is "Provisioning", want "Ready"`)

	setWidgetPhase(t, name, "w1", "Ready")
	waitHealthy(t, name, eventDriven)

	// The resource going back makes it wait again, also through the watch.
	setWidgetPhase(t, name, "w1", "Degraded")
	waitHealthyMessage(t, name, rukpakv1alpha1.ReasonProgressionProbeWaiting, `.status.phase is "Degraded", want "Ready"`)
}

// TestInvalidProgressionProbe: a CEL expression that does not compile stops the install with
// Installed=False, reason InvalidProgressionProbe, naming the probe; nothing is applied.
func TestInvalidProgressionProbe(t *testing.T) {
	const name = "probe-invalid"
	writeBundle(t, "example.com/probe-invalid:v1", map[string]string{"a.yaml": configMap("a", "1")})
	newProbedBD(t, name, "example.com/probe-invalid:v1", rukpakv1alpha1.ProgressionProbe{
		Name:     "broken",
		Selector: rukpakv1alpha1.ProbeSelector{Kind: "ConfigMap"},
		Assertions: []rukpakv1alpha1.ProbeAssertion{{Type: rukpakv1alpha1.ProbeAssertionCEL,
			CEL: &rukpakv1alpha1.CELAssertion{Expression: "self.data.value =="}}},
	})
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonInvalidProgressionProbe)
	if c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled); !strings.Contains(c.Message, `progression probe "broken": assertions[0]: CEL expression "self.data.value ==" does not compile`) {
		t.Fatalf("Installed message: %q", c.Message)
	}
	if _, err := getCM(t, name, "a"); err == nil {
		t.Fatal("the ConfigMap was applied although the probe does not compile")
	}
}

// TestProgressionProbesAreValidated: the API server enforces the probe union and selector rules.
func TestProgressionProbesAreValidated(t *testing.T) {
	base := func(name string, p rukpakv1alpha1.ProgressionProbe) *rukpakv1alpha1.BundleDeployment {
		return &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: rukpakv1alpha1.BundleDeploymentSpec{
			ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain, InstallNamespace: "default",
			Source:            rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "example.com/x:v1"}},
			ProgressionProbes: []rukpakv1alpha1.ProgressionProbe{p},
		}}
	}
	fv := &rukpakv1alpha1.FieldValueAssertion{FieldPath: ".status.phase", Value: "Ready"}
	for _, tc := range []struct {
		name  string
		probe rukpakv1alpha1.ProgressionProbe
		want  string // "" when valid
	}{
		{"valid", widgetReadyProbe(), ""},
		{"member of another type", rukpakv1alpha1.ProgressionProbe{Name: "p", Selector: rukpakv1alpha1.ProbeSelector{Kind: "Widget"},
			Assertions: []rukpakv1alpha1.ProbeAssertion{{Type: rukpakv1alpha1.ProbeAssertionCEL, FieldValue: fv}}},
			"cel must be set exactly when type is CEL"},
		{"empty selector", rukpakv1alpha1.ProgressionProbe{Name: "p",
			Assertions: []rukpakv1alpha1.ProbeAssertion{{Type: rukpakv1alpha1.ProbeAssertionFieldValue, FieldValue: fv}}},
			"selector needs group and/or kind, or labelSelector"},
		{"kind and labels", rukpakv1alpha1.ProgressionProbe{Name: "p", Selector: rukpakv1alpha1.ProbeSelector{Kind: "Widget",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}},
			Assertions: []rukpakv1alpha1.ProbeAssertion{{Type: rukpakv1alpha1.ProbeAssertionFieldValue, FieldValue: fv}}},
			"selector takes either group/kind or labelSelector, not both"},
		{"bad field path", rukpakv1alpha1.ProgressionProbe{Name: "p", Selector: rukpakv1alpha1.ProbeSelector{Kind: "Widget"},
			Assertions: []rukpakv1alpha1.ProbeAssertion{{Type: rukpakv1alpha1.ProbeAssertionFieldValue,
				FieldValue: &rukpakv1alpha1.FieldValueAssertion{FieldPath: "status.phase", Value: "x"}}}},
			"fieldPath"},
		{"no assertions", rukpakv1alpha1.ProgressionProbe{Name: "p", Selector: rukpakv1alpha1.ProbeSelector{Kind: "Widget"}}, "assertions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := k8s.Create(t.Context(), base("probe-validation", tc.probe), client.DryRunAll)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("a valid probe was rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
