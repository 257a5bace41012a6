package helm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

// Hostile charts, built here: rendering is bounded in time and output size, abandoned renders do
// not pile up, and a BundleDeployment with a runaway render gets no second one until it ends.

// slack is what a loaded test machine may add to a time limit before Render returns.
const slack = time.Second

// spinChart's only template iterates n*n times and writes nothing: it takes about 80ns·n² to
// render, so it ends, and the test can wait for it. The tests whose next render must find the
// runaway still running use n=6000 (seconds); n=2500 sometimes ended within 100 ms of the limit on an
// idle machine, and the next render got the slot.
func spinChart(n int) fstest.MapFS {
	return chartFS("spin", "", map[string]string{"cm.yaml": configMap +
		fmt.Sprintf("data:\n  x: \"{{ range until %d }}{{ range until %d }}{{ end }}{{ end }}\"\n", n, n)})
}

// smallChart renders one ConfigMap.
func smallChart() fstest.MapFS { return chartFS("small", "", map[string]string{"cm.yaml": configMap}) }

func renderAs(r *Renderer, ctx context.Context, bundleDeployment string, content fstest.MapFS) (time.Duration, error) {
	start := time.Now()
	_, err := r.Render(ctx, provisioner.Request{Content: content, Name: bundleDeployment, InstallNamespace: "ns", Capabilities: fixedCapabilities("v1.37.2")})
	return time.Since(start), err
}

// waitForRunaways waits until no render of r runs past its time limit, and reports how long that took.
func waitForRunaways(t *testing.T, r *Renderer) time.Duration {
	t.Helper()
	start := time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return r.slots.runaways() == 0, nil
	})
	if err != nil {
		t.Fatalf("%d runaway render(s) still running after a minute", r.slots.runaways())
	}
	return time.Since(start)
}

func wantRetryable(t *testing.T, err error, parts ...string) {
	t.Helper()
	var ib *provisioner.InvalidBundleError
	if err == nil || errors.As(err, &ib) {
		t.Fatalf("want a plain (retried) error, got %v", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func TestRenderTimeLimit(t *testing.T) {
	const limit = 100 * time.Millisecond
	r := New(WithLimits(Limits{Timeout: limit}))
	t.Cleanup(func() { waitForRunaways(t, r) })

	took, err := renderAs(r, t.Context(), "spinner", spinChart(6000))
	wantInvalid(t, err, ReasonRenderLimitExceeded, "chart spin 0.1.0", "within the 100ms limit", "--helm-render-timeout",
		"include itself recursively", "goes on in the background")
	t.Logf("looping chart: Render returned after %v (limit %v)", took, limit)
	if took > limit+slack {
		t.Errorf("Render returned after %v; the limit is %v", took, limit)
	}
	if n := r.slots.runaways(); n != 1 {
		t.Fatalf("%d runaway renders recorded, want 1", n)
	}

	// No second render of the same BundleDeployment while its runaway runs; others render.
	took, err = renderAs(r, t.Context(), "spinner", smallChart())
	wantRetryable(t, err, "chart spin 0.1.0", "is still running", "once it ends")
	if took > slack {
		t.Errorf("the refusal took %v", took)
	}
	if _, err := renderAs(r, t.Context(), "neighbour", smallChart()); err != nil {
		t.Errorf("another BundleDeployment's chart: %v", err)
	}

	t.Logf("the runaway render ended %v after Render gave up on it", waitForRunaways(t, r))
	if _, err := renderAs(r, t.Context(), "spinner", smallChart()); err != nil {
		t.Errorf("the BundleDeployment renders again once its runaway ended: %v", err)
	}
}

func TestRenderSlotsAreBounded(t *testing.T) {
	const limit = 100 * time.Millisecond
	r := New(WithLimits(Limits{Timeout: limit, MaxConcurrent: 1}))
	t.Cleanup(func() { waitForRunaways(t, r) })

	_, err := renderAs(r, t.Context(), "hostile", spinChart(6000))
	wantInvalid(t, err, ReasonRenderLimitExceeded, "100ms")
	// The runaway holds the only slot: another render waits at most the time limit for it.
	took, err := renderAs(r, t.Context(), "victim", smallChart())
	wantRetryable(t, err, "no render slot became free within 100ms", "all 1 (--helm-max-concurrent-renders)", "BundleDeployments hostile")
	if took < limit || took > limit+slack {
		t.Errorf("waited %v for a slot; the limit is %v", took, limit)
	}
	waitForRunaways(t, r)
	if _, err := renderAs(r, t.Context(), "victim", smallChart()); err != nil {
		t.Errorf("once the runaway ended: %v", err)
	}
}

func TestRenderStopsWaitingWhenCancelled(t *testing.T) {
	r := New()
	t.Cleanup(func() { waitForRunaways(t, r) })
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	took, err := renderAs(r, ctx, "cancelled", spinChart(2500))
	wantRetryable(t, err, "chart spin 0.1.0", context.DeadlineExceeded.Error())
	if took > 50*time.Millisecond+slack {
		t.Errorf("Render returned %v after its context ended", took)
	}
}

func TestRenderOutputLimit(t *testing.T) {
	const limit = 1 << 20
	for _, tc := range []struct {
		name     string
		template string
		// over is whether the output exceeds the limit.
		over bool
	}{
		{"one huge value", configMap + "data:\n  x: {{ repeat 20000000 \"x\" | quote }}\n", true},
		{"many documents", "{{ range until 200000 }}\n---\n" + strings.ReplaceAll(configMap, "plain", "cm-{{ . }}") + "{{ end }}", true},
		{"just below the limit", configMap + "data:\n  x: {{ repeat 1000000 \"x\" | quote }}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(WithLimits(Limits{MaxOutputBytes: limit}))
			took, err := renderAs(r, t.Context(), "big", chartFS("big", "", map[string]string{"cm.yaml": tc.template}))
			t.Logf("Render returned after %v", took)
			if !tc.over {
				if err != nil {
					t.Fatalf("output under the limit: %v", err)
				}
				return
			}
			wantInvalid(t, err, ReasonRenderLimitExceeded, "chart big 0.1.0", "more than the limit of 1048576 bytes",
				"--helm-render-max-bytes", "from big/templates/cm.yaml")
		})
	}
}

func TestDefaultLimits(t *testing.T) {
	got := New().limits.withDefaults()
	if got.Timeout != DefaultRenderTimeout || got.MaxOutputBytes != DefaultMaxRenderedBytes || got.MaxConcurrent != DefaultMaxConcurrentRenders {
		t.Errorf("defaults: %+v", got)
	}
	if cap(New().slots.slots) != DefaultMaxConcurrentRenders {
		t.Errorf("render slots: %d", cap(New().slots.slots))
	}
}
