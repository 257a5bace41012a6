package helm

// Bounded rendering. A chart's templates are programs: one can loop for hours ({{ range until N }}
// nested, or a template that includes itself twice) or produce gigabytes ({{ repeat N "x" }}).
// Helm's template engine takes no context and offers no hook into its output, so:
//
//   - Time: the templates are rendered in a goroutine, and Render stops waiting after
//     Limits.Timeout. The goroutine cannot be stopped; it runs on (a "runaway") until the engine
//     returns, holding its render slot. At most Limits.MaxConcurrent renders run at once, runaways
//     included, and a BundleDeployment with a runaway gets no second render until it ends, so a
//     hostile chart costs at most one of those slots (one CPU) per BundleDeployment, never an
//     unbounded pile of goroutines.
//   - Size: the output is measured when the engine returns a render, and more than
//     Limits.MaxOutputBytes is refused before it is decoded, stored or applied. The memory is
//     spent by then: about five times the render's output (the engine's string builders, the
//     function results they copy), all of it before the check. A template that asks for gigabytes
//     within the time limit (repeat with a huge count is one allocation) can exhaust the process's
//     memory before any check runs, and a runaway keeps allocating after Render gave up on it;
//     only rendering in a separate process could bound that.
//
// Both limits are reported as an InvalidBundleError with ReasonRenderLimitExceeded, naming the
// chart, the limit and its flag.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// ReasonRenderLimitExceeded: rendering the chart's templates took longer than the time limit or
// produced more than the output limit.
const ReasonRenderLimitExceeded = rukpakv1alpha1.ReasonRenderLimitExceeded

// Defaults of Limits.
const (
	// DefaultRenderTimeout is thousands of times what charts need (podinfo renders 5 KB in 5 ms on
	// a 2-core test machine) and short enough for a reconcile to report.
	DefaultRenderTimeout = 30 * time.Second
	// DefaultMaxRenderedBytes is 3000 times podinfo's output. A render uses about five times its
	// output in memory before it can be refused (measured: 20 MB of output, 100 MB; 200 MB, 1 GB),
	// so at this limit a refused render costs about 100 MB. CRDs in crds/ are files, not template
	// output, and do not count.
	DefaultMaxRenderedBytes = 16 << 20
	// DefaultMaxConcurrentRenders bounds renders in flight, runaways included.
	DefaultMaxConcurrentRenders = 4
)

// Limits bound what rendering a chart's templates may cost; a zero field takes its default.
type Limits struct {
	// Timeout bounds rendering the templates, both renders of the determinism check together
	// (flag --helm-render-timeout).
	Timeout time.Duration
	// MaxOutputBytes bounds the bytes one render of the templates produces, NOTES.txt and
	// hooks included (flag --helm-render-max-bytes).
	MaxOutputBytes int64
	// MaxConcurrent bounds the renders running at once, runaways included (flag
	// --helm-max-concurrent-renders).
	MaxConcurrent int
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultRenderTimeout
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxRenderedBytes
	}
	if l.MaxConcurrent <= 0 {
		l.MaxConcurrent = DefaultMaxConcurrentRenders
	}
	return l
}

// WithLimits sets the time, output and concurrency limits of rendering (defaults: 30s, 16 MiB, 4).
func WithLimits(l Limits) Option { return func(h *Renderer) { h.limits = l } }

// renderSlots hands out the right to run a render and keeps the runaways.
type renderSlots struct {
	slots chan struct{}
	mu    sync.Mutex
	// runaway holds, by BundleDeployment, the render that exceeded its time limit and still runs.
	runaway map[string]*inFlight
}

// inFlight is one render, from its slot being taken to the engine returning.
type inFlight struct {
	bundleDeployment, chart string
	started                 time.Time
	finished, abandoned     bool
}

func newRenderSlots(n int) *renderSlots {
	return &renderSlots{slots: make(chan struct{}, n), runaway: map[string]*inFlight{}}
}

// acquire takes a slot for a render of chart for bundleDeployment, waiting at most wait. It
// refuses at once while a runaway render of the same BundleDeployment still runs.
func (s *renderSlots) acquire(ctx context.Context, bundleDeployment, chart string, wait time.Duration) (*inFlight, error) {
	s.mu.Lock()
	rw := s.runaway[bundleDeployment]
	s.mu.Unlock()
	if rw != nil {
		return nil, notRendered("helm: a render of %s for this BundleDeployment, started %s ago, exceeded its time limit and is still running "+
			"(Helm's template engine cannot be interrupted); rukpak renders this BundleDeployment again once it ends, or after rukpak restarts",
			rw.chart, time.Since(rw.started).Round(time.Second))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return &inFlight{bundleDeployment: bundleDeployment, chart: chart, started: time.Now()}, nil
	case <-ctx.Done():
		return nil, notRendered("helm: waiting for a render slot: %w", ctx.Err())
	case <-t.C:
		return nil, notRendered("helm: no render slot became free within %s: all %d (--helm-max-concurrent-renders) are taken%s; rukpak retries",
			wait, cap(s.slots), s.describeRunaways())
	}
}

// finish is called when the engine returns: the slot is given back and a runaway forgotten.
func (s *renderSlots) finish(f *inFlight) {
	s.mu.Lock()
	f.finished = true
	if f.abandoned && s.runaway[f.bundleDeployment] == f {
		delete(s.runaway, f.bundleDeployment)
	}
	s.mu.Unlock()
	<-s.slots
}

// givenUp reports whether Render stopped waiting for f: its remaining work is wasted.
func (s *renderSlots) givenUp(f *inFlight) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return f.abandoned
}

// abandon records f as a runaway, unless it finished meanwhile (then it reports false).
func (s *renderSlots) abandon(f *inFlight) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.finished {
		return false
	}
	f.abandoned = true
	s.runaway[f.bundleDeployment] = f
	return true
}

// runaways is how many renders past their time limit still run.
func (s *renderSlots) runaways() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runaway)
}

func (s *renderSlots) describeRunaways() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.runaway) == 0 {
		return ""
	}
	var names []string
	for bd := range s.runaway {
		names = append(names, bd)
	}
	sort.Strings(names)
	return fmt.Sprintf(", %d of them by renders past their time limit (BundleDeployments %s)", len(names), strings.Join(names, ", "))
}

// notRenderedError is a render that did not run, or was stopped waiting for, for a reason that may
// pass (a runaway of the same BundleDeployment, no free slot, a cancelled context): the controller
// retries it.
type notRenderedError struct{ err error }

func (e *notRenderedError) Error() string { return e.err.Error() }
func (e *notRenderedError) Unwrap() error { return e.err }

// rendered is what renderDeterministic returns.
type rendered struct {
	out rendering
	err error
}

// renderWithin runs render in a goroutine, holding one of the renderer's slots until it returns,
// and stops waiting for it after the time limit (see the top of this file). render may call
// givenUp between steps and stop early when it reports true.
func (r *Renderer) renderWithin(ctx context.Context, bundleDeployment, chart string, render func(givenUp func() bool) (rendering, error)) (rendering, error) {
	limits := r.limits.withDefaults()
	f, err := r.slots.acquire(ctx, bundleDeployment, chart, limits.Timeout)
	if err != nil {
		return rendering{}, err
	}
	done := make(chan rendered, 1) // buffered: a runaway never blocks on it
	go func() {
		var res rendered
		func() {
			defer func() {
				if p := recover(); p != nil {
					res.err = fmt.Errorf("the template engine failed: %v", p)
				}
			}()
			res.out, res.err = render(func() bool { return r.slots.givenUp(f) })
		}()
		r.slots.finish(f)
		done <- res
	}()
	timer := time.NewTimer(limits.Timeout)
	defer timer.Stop()
	var stopped error
	select {
	case res := <-done:
		return res.out, res.err
	case <-timer.C:
	case <-ctx.Done():
		stopped = ctx.Err()
	}
	if !r.slots.abandon(f) {
		res := <-done // it finished as the limit passed
		return res.out, res.err
	}
	if stopped != nil {
		return rendering{}, notRendered("helm: rendering %s: %w", chart, stopped)
	}
	return rendering{}, invalid(ReasonRenderLimitExceeded, fmt.Sprintf(
		"%s: rendering its templates did not finish within the %s limit (--helm-render-timeout); a template may range over a huge list or include itself recursively. "+
			"Fix the chart or its values, or raise the limit if the chart really needs longer. Helm's template engine cannot be interrupted: this render goes on in the background, "+
			"and rukpak starts no other render of this BundleDeployment until it ends",
		chart, limits.Timeout))
}

func notRendered(format string, args ...any) error {
	return &notRenderedError{err: fmt.Errorf(format, args...)}
}

// outputTooLarge reports a render whose files add up to more than max bytes, or "" when they do not.
func outputTooLarge(files map[string]string, max int64) string {
	var total int64
	biggest, size := "", 0
	for name, content := range files {
		total += int64(len(content))
		if len(content) > size || (len(content) == size && name < biggest) {
			biggest, size = name, len(content)
		}
	}
	if total <= max {
		return ""
	}
	return fmt.Sprintf("its templates rendered %d bytes, more than the limit of %d bytes (--helm-render-max-bytes); %d of them come from %s. "+
		"Fix the chart or its values (a large repeat or range), or raise the limit if the output is legitimate",
		total, max, size, biggest)
}
