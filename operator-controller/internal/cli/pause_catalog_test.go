package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
)

// catalog pause --wait reports catalogd's message; catalog resume --wait waits for Paused=False and
// then for the current spec to be served.
func TestPauseAndResumeCatalog(t *testing.T) {
	cat := &catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "cat", Generation: 1}}
	cat.Status.Conditions = []metav1.Condition{
		{Type: catalogdv1alpha1.TypeUnpacked, Status: metav1.ConditionTrue, Reason: catalogdv1alpha1.ReasonUnpackSucceeded, ObservedGeneration: 1, LastTransitionTime: metav1.Now()},
		{Type: catalogdv1alpha1.TypeServing, Status: metav1.ConditionTrue, Reason: catalogdv1alpha1.ReasonServing, ObservedGeneration: 1, LastTransitionTime: metav1.Now()},
		{Type: catalogdv1alpha1.TypePaused, Status: metav1.ConditionFalse, Reason: catalogdv1alpha1.ReasonNotPaused, ObservedGeneration: 1, LastTransitionTime: metav1.Now()},
	}
	pc := newPauseCluster(t, 2, cat)

	out, errOut, err := pc.run(t, "catalog", "pause", "cat", "--wait")
	if err != nil {
		t.Fatalf("catalog pause --wait: %v\n%s", err, errOut)
	}
	if p := pc.takePatches(); len(p) != 1 || p[0] != `{"spec":{"paused":true}}` {
		t.Fatalf("patches: %q", p)
	}
	wantLines(t, "stderr", errOut, "catalog cat paused (spec.paused set to true)\n",
		"catalog cat: Paused=True: paused since 2026-01-01T12:00:00Z (spec.paused): nothing is unpacked or polled until spec.paused is false\n")
	wantLines(t, "stdout", out, "cat", "Paused=True")

	_, errOut, err = pc.run(t, "catalog", "resume", "cat", "--wait")
	if err != nil {
		t.Fatalf("catalog resume --wait: %v\n%s", err, errOut)
	}
	if p := pc.takePatches(); len(p) != 1 || p[0] != `{"spec":{"paused":false}}` {
		t.Fatalf("patches: %q", p)
	}
	wantLines(t, "stderr", errOut, "catalog cat resumed (spec.paused set to false)\n", "catalog cat: Paused=False: not paused\n",
		"catalog cat: Unpacked=True (Succeeded) Serving=True (Serving)\n")
	got := &catalogdv1alpha1.Catalog{}
	if err := pc.client.Get(context.Background(), client.ObjectKey{Name: "cat"}, got); err != nil || got.Spec.Paused || got.Generation != 3 {
		t.Fatalf("after resume: err %v, spec.paused %v, generation %d", err, got.Spec.Paused, got.Generation)
	}
}

// catalog add --wait (waitCatalogServing) stops at once on a Catalog paused before its current spec
// was unpacked, naming the pause and the command that resumes it; a paused Catalog that serves its
// current spec is served; a pause that is being lifted keeps it waiting.
func TestWaitCatalogServingOnAPausedCatalog(t *testing.T) {
	s, err := command.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	pausedMsg := "paused since 2026-01-01T12:00:00Z (spec.paused): nothing is unpacked or polled until spec.paused is false; the content of generation 1 (abc) stays served as it is"
	for _, tc := range []struct {
		name                      string
		unpackedGen, pausedGen    int64 // the Catalog is at generation 2
		pausedStatus              metav1.ConditionStatus
		wantErr, wantTimeout      bool
		wantErrText, wantErrText2 string
	}{
		{name: "paused before the current spec was unpacked", unpackedGen: 1, pausedGen: 2, pausedStatus: metav1.ConditionTrue, wantErr: true,
			wantErrText:  "catalog cat is paused (spec.paused), so its current spec (generation 2) is not unpacked until it is resumed: " + pausedMsg,
			wantErrText2: "kubectl olmv1 catalog resume cat --wait"},
		{name: "paused after the current spec was unpacked", unpackedGen: 2, pausedGen: 2, pausedStatus: metav1.ConditionTrue},
		{name: "being resumed: the pause is of the previous generation", unpackedGen: 1, pausedGen: 1, pausedStatus: metav1.ConditionTrue, wantErr: true, wantTimeout: true},
		{name: "not paused, not unpacked yet", unpackedGen: 1, pausedGen: 2, pausedStatus: metav1.ConditionFalse, wantErr: true, wantTimeout: true},
	} {
		cat := &catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "cat", Generation: 2}, Spec: catalogdv1alpha1.CatalogSpec{Paused: true}}
		cat.Status.Conditions = []metav1.Condition{
			{Type: catalogdv1alpha1.TypeUnpacked, Status: metav1.ConditionTrue, Reason: catalogdv1alpha1.ReasonUnpackSucceeded, ObservedGeneration: tc.unpackedGen, LastTransitionTime: metav1.Now()},
			{Type: catalogdv1alpha1.TypeServing, Status: metav1.ConditionTrue, Reason: catalogdv1alpha1.ReasonServing, ObservedGeneration: tc.unpackedGen, LastTransitionTime: metav1.Now()},
			{Type: catalogdv1alpha1.TypePaused, Status: tc.pausedStatus, Reason: catalogdv1alpha1.ReasonPaused, Message: pausedMsg, ObservedGeneration: tc.pausedGen, LastTransitionTime: metav1.Now()},
		}
		c := fake.NewClientBuilder().WithScheme(s).WithObjects(cat).WithStatusSubresource(cat).Build()
		errOut := &bytes.Buffer{}
		o := &options{&command.Options{Streams: command.Streams{Out: &bytes.Buffer{}, ErrOut: errOut}, PollInterval: 10 * time.Millisecond}}
		timeout := time.Minute
		if tc.wantTimeout {
			timeout = 300 * time.Millisecond
		}
		start := time.Now()
		err := o.waitCatalogServing(context.Background(), c, "cat", timeout)
		took := time.Since(start)
		switch {
		case !tc.wantErr && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr && err == nil:
			t.Errorf("%s: the wait succeeded", tc.name)
		case tc.wantTimeout && !strings.Contains(err.Error(), "timed out"):
			t.Errorf("%s: want the wait to go on until the timeout, got %v", tc.name, err)
		case tc.wantErr && !tc.wantTimeout && (took > 10*time.Second || !strings.Contains(err.Error(), tc.wantErrText) || !strings.Contains(err.Error(), tc.wantErrText2)):
			t.Errorf("%s: want an immediate error %q … %q, got after %v: %v", tc.name, tc.wantErrText, tc.wantErrText2, took, err)
		}
		if tc.pausedStatus == metav1.ConditionTrue && tc.pausedGen == 2 && !strings.Contains(errOut.String(), " Paused=True\n") {
			t.Errorf("%s: the progress line does not show the pause:\n%s", tc.name, errOut)
		}
	}
}

// install/approve/upgrade --wait stop at once on a paused Operator that is not yet where they wait
// for it to be: nothing changes until it is resumed.
func TestWaitInstalledStopsWhenPaused(t *testing.T) {
	s, err := command.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, pausedGen := range []int64{2, 1} {
		op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", Generation: 2}, Spec: operatorsv1alpha1.OperatorSpec{Paused: true}}
		op.Status.InstalledBundle = &operatorsv1alpha1.BundleMetadata{Name: "pkg.v1.0.0", Version: "1.0.0"}
		op.Status.Conditions = []metav1.Condition{
			{Type: operatorsv1alpha1.TypeInstalled, Status: metav1.ConditionTrue, Reason: "InstallationSucceeded", ObservedGeneration: 2, LastTransitionTime: metav1.Now()},
			{Type: operatorsv1alpha1.TypeHealthy, Status: metav1.ConditionTrue, Reason: "Healthy", ObservedGeneration: 2, LastTransitionTime: metav1.Now()},
			{Type: operatorsv1alpha1.TypePaused, Status: metav1.ConditionTrue, Reason: operatorsv1alpha1.ReasonPaused, Message: "paused since 2026-01-01T12:00:00Z",
				ObservedGeneration: pausedGen, LastTransitionTime: metav1.Now()},
		}
		c := fake.NewClientBuilder().WithScheme(s).WithObjects(op).WithStatusSubresource(op).Build()
		o := &options{&command.Options{Streams: command.Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, PollInterval: 10 * time.Millisecond}}

		// Installed and healthy on 1.0.0: the wait for 1.0.0 succeeds, paused or not.
		if _, err := o.waitInstalled(context.Background(), c, "op", time.Minute, "1.0.0"); err != nil {
			t.Errorf("paused at generation %d, waiting for the installed version: %v", pausedGen, err)
		}
		timeout := time.Minute
		if pausedGen != 2 {
			timeout = 300 * time.Millisecond
		}
		_, err := o.waitInstalled(context.Background(), c, "op", timeout, "2.0.0")
		switch {
		case err == nil:
			t.Errorf("paused at generation %d: the wait for 2.0.0 succeeded", pausedGen)
		case pausedGen == 2 && (!strings.Contains(err.Error(), "operator op: paused (spec.paused)") || !strings.Contains(err.Error(), "paused since 2026-01-01T12:00:00Z") ||
			!strings.Contains(err.Error(), "kubectl olmv1 resume op --wait")):
			t.Errorf("want an immediate error naming the pause and the resume command, got %v", err)
		case pausedGen != 2 && !strings.Contains(err.Error(), "timed out"):
			t.Errorf("a pause of the previous generation (being resumed) must not stop the wait: %v", err)
		}
	}
}
