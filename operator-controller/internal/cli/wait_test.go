package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
)

// install --wait stops as soon as the Operator reports the BundleDeployment's failure (e.g. an
// object it may not take), with the reason and the message; waiting states keep it waiting.
func TestWaitInstalledStopsOnFailure(t *testing.T) {
	s, err := command.Scheme()
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
		o := &options{&command.Options{Streams: command.Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, PollInterval: 10 * time.Millisecond}}
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

// install --wait gives up on an Operator that stays unresolvable (a package no catalog has) once
// Resolved=False has lasted resolutionGrace; a failure that clears sooner keeps it waiting.
func TestResolutionFailure(t *testing.T) {
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", Generation: 3}}
	failed := []metav1.Condition{{Type: operatorsv1alpha1.TypeResolved, Status: metav1.ConditionFalse, Reason: operatorsv1alpha1.ReasonResolutionFailed,
		Message: `no package "nope" in any catalog`, ObservedGeneration: 3}}
	var since time.Time
	t0 := time.Unix(1000, 0)
	op.Status.Conditions = failed
	if err := resolutionFailure(op, &since, t0); err != nil {
		t.Fatalf("first sight of Resolved=False: %v", err)
	}
	if err := resolutionFailure(op, &since, t0.Add(resolutionGrace/2)); err != nil {
		t.Fatalf("within the grace: %v", err)
	}
	// It clears: the clock restarts.
	op.Status.Conditions = []metav1.Condition{{Type: operatorsv1alpha1.TypeResolved, Status: metav1.ConditionTrue, Reason: "Success", ObservedGeneration: 3}}
	if err := resolutionFailure(op, &since, t0.Add(resolutionGrace)); err != nil || !since.IsZero() {
		t.Fatalf("resolved: %v, since %v", err, since)
	}
	op.Status.Conditions = failed
	_ = resolutionFailure(op, &since, t0.Add(2*resolutionGrace))
	err := resolutionFailure(op, &since, t0.Add(3*resolutionGrace))
	if err == nil || !strings.Contains(err.Error(), `reason ResolutionFailed: no package "nope" in any catalog`) {
		t.Fatalf("after the grace: %v", err)
	}
	// The condition of an older generation does not count.
	since = time.Time{}
	op.Status.Conditions[0].ObservedGeneration = 2
	if err := resolutionFailure(op, &since, t0); err != nil || !since.IsZero() {
		t.Fatalf("older generation: %v", err)
	}
}

// catalog add --wait stops at once when the Catalog's current generation failed to unpack.
func TestWaitCatalogServingStopsOnFailure(t *testing.T) {
	s, err := command.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	cat := &catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "cat", Generation: 1}}
	cat.Status.Conditions = []metav1.Condition{{Type: catalogdv1alpha1.TypeUnpacked, Status: metav1.ConditionFalse, Reason: catalogdv1alpha1.ReasonInvalidCatalog,
		Message: "catalog.yaml line 3: unknown schema", ObservedGeneration: 1, LastTransitionTime: metav1.Now()}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(cat).WithStatusSubresource(cat).Build()
	o := &options{&command.Options{Streams: command.Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, PollInterval: 10 * time.Millisecond}}
	start := time.Now()
	err = o.waitCatalogServing(context.Background(), c, "cat", time.Minute)
	if err == nil || !strings.Contains(err.Error(), "reason InvalidCatalog: catalog.yaml line 3: unknown schema") || time.Since(start) > 10*time.Second {
		t.Fatalf("want an immediate error naming the reason, got after %v: %v", time.Since(start), err)
	}
}
