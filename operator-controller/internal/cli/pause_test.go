package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
)

// pauseCluster is a fake API server with a stand-in controller. A patch that changes the spec
// bumps metadata.generation, as the API server does; the controller answers only after
// reportAfter further reads of the object (never when negative), setting the Paused condition for
// the new generation (and, for a resumed Catalog, Unpacked and Serving), so --wait has to wait.
type pauseCluster struct {
	client      client.Client
	reportAfter int

	mu      sync.Mutex
	patches []string
	pending bool
	reads   int
}

func newPauseCluster(t *testing.T, reportAfter int, objs ...client.Object) *pauseCluster {
	t.Helper()
	s, err := command.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	pc := &pauseCluster{reportAfter: reportAfter}
	pc.client = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(objs...).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				data, err := patch.Data(obj)
				if err != nil {
					return err
				}
				if err := c.Patch(ctx, obj, patch, opts...); err != nil {
					return err
				}
				obj.SetGeneration(obj.GetGeneration() + 1)
				if err := c.Update(ctx, obj); err != nil {
					return err
				}
				pc.mu.Lock()
				defer pc.mu.Unlock()
				pc.patches = append(pc.patches, string(data))
				pc.pending, pc.reads = true, 0
				return nil
			},
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if err := c.Get(ctx, key, obj, opts...); err != nil {
					return err
				}
				pc.mu.Lock()
				defer pc.mu.Unlock()
				if !pc.pending || pc.reportAfter < 0 {
					return nil
				}
				if pc.reads++; pc.reads <= pc.reportAfter {
					return nil
				}
				pc.pending = false
				if err := reconcilePause(ctx, c, obj); err != nil {
					return err
				}
				return c.Get(ctx, key, obj, opts...)
			},
		}).Build()
	return pc
}

// reconcilePause is the stand-in controller's status update.
func reconcilePause(ctx context.Context, c client.Client, obj client.Object) error {
	now := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: obj.GetGeneration(), LastTransitionTime: now}
	}
	switch o := obj.(type) {
	case *operatorsv1alpha1.Operator:
		if o.Spec.Paused {
			meta.SetStatusCondition(&o.Status.Conditions, cond(operatorsv1alpha1.TypePaused, metav1.ConditionTrue, operatorsv1alpha1.ReasonPaused,
				"paused since 2026-01-01T12:00:00Z: the Operator stays on its installed bundle"))
		} else {
			meta.SetStatusCondition(&o.Status.Conditions, cond(operatorsv1alpha1.TypePaused, metav1.ConditionFalse, operatorsv1alpha1.ReasonNotPaused,
				"spec.paused is false"))
		}
	case *catalogdv1alpha1.Catalog:
		if o.Spec.Paused {
			meta.SetStatusCondition(&o.Status.Conditions, cond(catalogdv1alpha1.TypePaused, metav1.ConditionTrue, catalogdv1alpha1.ReasonPaused,
				"paused since 2026-01-01T12:00:00Z (spec.paused): nothing is unpacked or polled until spec.paused is false"))
		} else {
			meta.SetStatusCondition(&o.Status.Conditions, cond(catalogdv1alpha1.TypePaused, metav1.ConditionFalse, catalogdv1alpha1.ReasonNotPaused, "not paused"))
			meta.SetStatusCondition(&o.Status.Conditions, cond(catalogdv1alpha1.TypeUnpacked, metav1.ConditionTrue, catalogdv1alpha1.ReasonUnpackSucceeded, "unpacked"))
			meta.SetStatusCondition(&o.Status.Conditions, cond(catalogdv1alpha1.TypeServing, metav1.ConditionTrue, catalogdv1alpha1.ReasonServing, "served"))
		}
	}
	return c.Status().Update(ctx, obj)
}

func (pc *pauseCluster) run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := &options{&command.Options{Streams: command.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, PollInterval: 5 * time.Millisecond}}
	root := newRootCommand(o)
	o.NewClient = func() (client.Client, error) { return pc.client, nil }
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

func (pc *pauseCluster) takePatches() []string {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	p := pc.patches
	pc.patches = nil
	return p
}

func runningOperator() *operatorsv1alpha1.Operator {
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", Generation: 1},
		Spec: operatorsv1alpha1.OperatorSpec{PackageName: "pkg"}}
	op.Status.Conditions = []metav1.Condition{{Type: operatorsv1alpha1.TypePaused, Status: metav1.ConditionFalse, Reason: operatorsv1alpha1.ReasonNotPaused,
		Message: "spec.paused is false", ObservedGeneration: 1, LastTransitionTime: metav1.Now()}}
	return op
}

func wantLines(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// pause --wait patches spec.paused once, waits past the condition of the previous generation until
// the controller reports Paused=True for the new one, and prints its message; pausing again changes
// nothing; resume patches it back, and without --wait says that the controller has not answered yet.
func TestPauseAndResumeOperator(t *testing.T) {
	pc := newPauseCluster(t, 3, runningOperator())

	out, errOut, err := pc.run(t, "pause", "op", "--wait")
	if err != nil {
		t.Fatalf("pause --wait: %v\n%s", err, errOut)
	}
	if p := pc.takePatches(); len(p) != 1 || p[0] != `{"spec":{"paused":true}}` {
		t.Fatalf("patches: %q", p)
	}
	wantLines(t, "stderr", errOut,
		"operator op paused (spec.paused set to true)\n",
		"operator op: Paused=False (NotPaused, of generation 1; the current one is 2)\n",
		"operator op: Paused=True (Paused)\n",
		"operator op: Paused=True: paused since 2026-01-01T12:00:00Z: the Operator stays on its installed bundle\n")
	wantLines(t, "stdout", out, "NAME", "SPEC.PAUSED", "op", "true", "Paused=True", "paused since 2026-01-01T12:00:00Z")
	op := &operatorsv1alpha1.Operator{}
	if err := pc.client.Get(context.Background(), client.ObjectKey{Name: "op"}, op); err != nil || !op.Spec.Paused || op.Generation != 2 {
		t.Fatalf("after pause: err %v, spec.paused %v, generation %d", err, op.Spec.Paused, op.Generation)
	}

	// Pausing a paused Operator sends nothing and reports the pause.
	out, errOut, err = pc.run(t, "pause", "op", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if p := pc.takePatches(); len(p) != 0 {
		t.Fatalf("pause of a paused Operator patched: %q", p)
	}
	wantLines(t, "stderr", errOut, "operator op is already paused (spec.paused is true); nothing changed\n", "operator op: Paused=True: paused since")
	var rep pauseReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if rep.Kind != "operator" || rep.Name != "op" || !rep.Paused || rep.Changed || rep.Condition == nil || rep.Condition.Reason != operatorsv1alpha1.ReasonPaused {
		t.Fatalf("-o json: %+v", rep)
	}

	// resume without --wait: one patch; the controller has not answered yet.
	out, errOut, err = pc.run(t, "resume", "op")
	if err != nil {
		t.Fatal(err)
	}
	if p := pc.takePatches(); len(p) != 1 || p[0] != `{"spec":{"paused":false}}` {
		t.Fatalf("patches: %q", p)
	}
	wantLines(t, "stderr", errOut, "operator op resumed (spec.paused set to false)\n",
		"operator op: operator-controller has not reported Paused=False for this change yet (--wait waits for it)\n")
	wantLines(t, "stdout", out, "not reported yet")

	// resume --wait on the resumed Operator: nothing to patch, it waits for the answer.
	_, errOut, err = pc.run(t, "resume", "op", "--wait")
	if err != nil {
		t.Fatalf("resume --wait: %v\n%s", err, errOut)
	}
	if p := pc.takePatches(); len(p) != 0 {
		t.Fatalf("patches: %q", p)
	}
	wantLines(t, "stderr", errOut, "operator op is not paused (spec.paused is false); nothing changed\n",
		"operator op: Paused=True (Paused, of generation 2; the current one is 3)\n", "operator op: Paused=False: spec.paused is false\n")
}

// Without a controller answering, --wait stops at its timeout and says what it waited for.
func TestPauseWaitTimesOutWithoutAnAnswer(t *testing.T) {
	pc := newPauseCluster(t, -1, runningOperator())
	_, errOut, err := pc.run(t, "pause", "op", "--wait", "--timeout", "200ms")
	if err == nil || !strings.Contains(err.Error(), "operator op: waiting for Paused=True (is operator-controller running?): timed out after 200ms") {
		t.Fatalf("err = %v\n%s", err, errOut)
	}
	if p := pc.takePatches(); len(p) != 1 {
		t.Fatalf("patches: %q", p)
	}
}

func TestPauseRefusesAMissingObject(t *testing.T) {
	pc := newPauseCluster(t, 0)
	for _, args := range [][]string{{"pause", "nope"}, {"catalog", "resume", "nope"}} {
		_, _, err := pc.run(t, args...)
		kind := map[bool]string{true: "catalog", false: "operator"}[args[0] == "catalog"]
		if err == nil || !strings.Contains(err.Error(), kind+" nope: ") || !strings.Contains(err.Error(), "not found") {
			t.Errorf("%v: err = %v", args, err)
		}
	}
	if p := pc.takePatches(); len(p) != 0 {
		t.Fatalf("patches: %q", p)
	}
}
