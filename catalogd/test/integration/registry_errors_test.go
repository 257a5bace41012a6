package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/serve"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
	"github.com/olmv1/olmv1/rukpak/pkg/source/unpackertest"
)

// registryErrorsLabel scopes this test's manager to its own Catalogs.
const registryErrorsLabel = "test.olmv1.io/registry-errors"

// unpackAttempts records when each Unpack (each reconcile) starts, and runs the change of the
// registry's behaviour the test asked for at the start of the next one, so that every attempt sees
// one behaviour from its first request to its last. Its start is the OnUnpack hook of the
// unpacker.
type unpackAttempts struct {
	mu      sync.Mutex
	list    []attempt
	phase   string
	pending func()
}

// attempt is one Unpack call.
type attempt struct {
	phase string
	start time.Time
	// end is the start of the next attempt (zero for the last one: it may still be running).
	end time.Time
}

// next makes the attempts from the next one on belong to phase, after change has run.
func (a *unpackAttempts) next(phase string, change func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pending = func() { change(); a.phase = phase }
}

// start records an attempt starting now, after the pending change.
func (a *unpackAttempts) start(string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending != nil {
		a.pending()
		a.pending = nil
	}
	a.list = append(a.list, attempt{phase: a.phase, start: time.Now()})
}

// all returns every attempt so far, with its end.
func (a *unpackAttempts) all() []attempt {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := append([]attempt(nil), a.list...)
	for i := range out {
		if i+1 < len(out) {
			out[i].end = out[i+1].start
		}
	}
	return out
}

// complete returns the indexes (in all) of phase's attempts that have ended: another attempt
// started after them.
func complete(all []attempt, phase string) []int {
	var out []int
	for i, at := range all {
		if at.phase == phase && !at.end.IsZero() {
			out = append(out, i)
		}
	}
	return out
}

// dialLog records every connection attempt to one address.
type dialLog struct {
	addr string

	mu    sync.Mutex
	times []time.Time
	errs  []string
}

func (d *dialLog) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := nd.DialContext(ctx, network, addr)
		if addr == d.addr {
			d.mu.Lock()
			d.times = append(d.times, time.Now())
			d.errs = append(d.errs, fmt.Sprint(err))
			d.mu.Unlock()
		}
		return c, err
	}
}

// between returns the dials in [from, to) (to zero: up to now) and their errors.
func (d *dialLog) between(from, to time.Time) (times []time.Time, errs []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, at := range d.times {
		if !at.Before(from) && (to.IsZero() || at.Before(to)) {
			times, errs = append(times, at), append(errs, d.errs[i])
		}
	}
	return times, errs
}

// requestsBetween returns the arrival times of the registry's requests in [from, to) (to zero: up
// to now).
func requestsBetween(reg *sourcetest.Registry, from, to time.Time) []time.Time {
	var out []time.Time
	for _, at := range reg.RequestTimes() {
		if !at.Before(from) && (to.IsZero() || at.Before(to)) {
			out = append(out, at)
		}
	}
	return out
}

// gaps returns the durations between consecutive times.
func gaps(times []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(times); i++ {
		out = append(out, times[i].Sub(times[i-1]))
	}
	return out
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// pollUntil polls cond every 50 ms until it holds, for at most timeout.
func pollUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s; last seen: %s", timeout, what, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pushCatalogImage builds a file-based catalog image of package foo at version and pushes it to
// reg as repoAndTag.
func pushCatalogImage(t *testing.T, reg *sourcetest.Registry, version, repoAndTag string) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"foo/package.yaml": "schema: olm.package\nname: foo\ndefaultChannel: stable\n",
		"foo/channel.json": `{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v` + version + `"}]}`,
		"foo/bundle.yaml": "schema: olm.bundle\npackage: foo\nname: foo.v" + version + "\nimage: example.com/foo:v" + version +
			"\nproperties:\n- type: olm.package\n  value: {packageName: foo, version: " + version + "}\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img, err := imagebuild.CatalogImage(dir)
	if err != nil {
		t.Fatal(err)
	}
	reg.Push(t, img, repoAndTag)
}

// A Catalog whose registry is busy and then down, reconciled by catalogd's Catalog reconciler with
// the real source unpacker against this package's kube-apiserver, and a registry on 127.0.0.1
// (sourcetest.Registry) that answers 503, then 429, then 429 with Retry-After, then refuses
// connections (its listener closed). Per case: the Unpacked condition's message; the times the
// registry is asked again (from the registry's request timestamps, or from the dial attempts once
// nothing listens); and that the content served before keeps being served.
//
// One reconcile is one Unpack. What one Unpack sends: a 503 is retried once by go-containerregistry
// after about 200 ms, so two GET /v2/; a 429 is not retried, so one GET /v2/; a refused connection
// is one dial per scheme (https, then http: the registry is on a loopback address). Between
// reconciles the controller waits: controller-runtime's per-object exponential backoff (5 ms,
// doubling, at most 1000 s) after an error, or the registry's Retry-After.
func TestCatalogRegistryBusyThenDown(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	pushCatalogImage(t, reg, "1.0.0", "catalogs/demo:v1")
	pushCatalogImage(t, reg, "2.0.0", "catalogs/demo:v2")
	dials := &dialLog{addr: reg.Host}

	tmp := t.TempDir()
	store, err := storage.New(filepath.Join(tmp, "storage"))
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dials.dialer()
	real, err := source.New(source.Config{CacheDir: filepath.Join(tmp, "cache"), Client: suite.Client, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	attempts := &unpackAttempts{phase: "healthy"}
	unpacker := unpackertest.New(t)
	unpacker.Route(real, rukpakv1alpha1.SourceTypeImage)
	unpacker.OnUnpack(attempts.start)
	contentURL := startCatalogManager(t, registryErrorsLabel, unpacker, store, "")

	const name = "registry-errors"
	cat := &catalogdv1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{registryErrorsLabel: "true"}},
		Spec: catalogdv1alpha1.CatalogSpec{Source: rukpakv1alpha1.Source{
			Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: reg.Ref("catalogs/demo:v1")},
		}},
	}
	if err := suite.Client.Create(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Delete while the manager runs, so that the finalizer is removed.
		_ = suite.Client.Delete(context.Background(), cat)
		pollUntil(t, 30*time.Second, "the Catalog is gone", func() (bool, string) {
			err := suite.Client.Get(context.Background(), client.ObjectKey{Name: name}, &catalogdv1alpha1.Catalog{})
			return err != nil, fmt.Sprint(err)
		})
	})

	get := func() *catalogdv1alpha1.Catalog {
		t.Helper()
		c := &catalogdv1alpha1.Catalog{}
		if err := suite.Client.Get(t.Context(), client.ObjectKey{Name: name}, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	served := func() string {
		t.Helper()
		resp, err := http.Get(contentURL + serve.URLPath(name))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s: %s", serve.URLPath(name), resp.Status, body)
		}
		return string(body)
	}

	pollUntil(t, 30*time.Second, "v1 is served", func() (bool, string) {
		c := get()
		return meta.IsStatusConditionTrue(c.Status.Conditions, catalogdv1alpha1.TypeServing) && c.Status.ObservedGeneration == 1,
			fmt.Sprintf("%+v", c.Status.Conditions)
	})
	good := get().Status
	goodContent := served()
	if !strings.Contains(goodContent, "foo.v1.0.0") {
		t.Fatalf("served content does not hold foo.v1.0.0: %s", goodContent)
	}

	// keepsServing checks that the last good content is still what is served and reported.
	keepsServing := func(t *testing.T) {
		t.Helper()
		c := get()
		s := meta.FindStatusCondition(c.Status.Conditions, catalogdv1alpha1.TypeServing)
		if s == nil || s.Status != metav1.ConditionTrue || s.Reason != catalogdv1alpha1.ReasonServingPreviousContent ||
			!strings.Contains(s.Message, "serving the last good content, from generation 1") {
			t.Errorf("Serving: %+v, want True ServingPreviousContent naming generation 1", s)
		}
		if c.Status.ContentHash != good.ContentHash || c.Status.ResolvedSource.Image.Ref != good.ResolvedSource.Image.Ref {
			t.Errorf("status names %s (%s), want the last good %s (%s)", c.Status.ContentHash, c.Status.ResolvedSource.Image.Ref,
				good.ContentHash, good.ResolvedSource.Image.Ref)
		}
		if got := served(); got != goodContent {
			t.Errorf("served content changed:\n%s\nwant\n%s", got, goodContent)
		}
	}
	// waitUnpacked waits for at least n complete attempts of phase and for an Unpacked condition
	// whose message satisfies ok (want describes it); waitExactly wants the message itself.
	ref2 := reg.Ref("catalogs/demo:v2")
	waitUnpacked := func(t *testing.T, phase string, n int, want string, ok func(msg string) bool) []attempt {
		t.Helper()
		pollUntil(t, 60*time.Second, fmt.Sprintf("%d %s attempts and Unpacked %s", n, phase, want), func() (bool, string) {
			done := len(complete(attempts.all(), phase))
			u := meta.FindStatusCondition(get().Status.Conditions, catalogdv1alpha1.TypeUnpacked)
			return done >= n && u != nil && u.Status == metav1.ConditionFalse && u.Reason == catalogdv1alpha1.ReasonUnpackFailed &&
				u.ObservedGeneration == 2 && ok(u.Message), fmt.Sprintf("%d complete attempts, Unpacked %+v", done, u)
		})
		t.Logf("%s: Unpacked=False UnpackFailed: %s", phase, meta.FindStatusCondition(get().Status.Conditions, catalogdv1alpha1.TypeUnpacked).Message)
		return attempts.all()
	}
	waitExactly := func(t *testing.T, phase string, n int, message string) []attempt {
		t.Helper()
		return waitUnpacked(t, phase, n, fmt.Sprintf("%q", message), func(msg string) bool { return msg == message })
	}
	// first returns when attempt i first reached the registry (its first request), checking that it
	// sent want requests.
	first := func(t *testing.T, all []attempt, i, want int) time.Time {
		t.Helper()
		reqs := requestsBetween(reg, all[i].start, all[i].end)
		if len(reqs) != want {
			t.Fatalf("attempt %d (%s) sent %d requests to the registry, want %d", i+1, all[i].phase, len(reqs), want)
		}
		return reqs[0]
	}
	// growing checks, loosely, that gaps grow: each of the last three gaps is larger than the
	// shortest of the first three, and the last is at least twice that. (The first gaps differ by a
	// few milliseconds of backoff, less than the jitter of go-containerregistry's own retry and the
	// noise of a shared machine.)
	growing := func(t *testing.T, what string, g []time.Duration) {
		t.Helper()
		if len(g) < 7 {
			t.Fatalf("%s: %d gaps, want at least 7", what, len(g))
		}
		base := min(g[0], g[1], g[2])
		for i := len(g) - 3; i < len(g); i++ {
			if g[i] <= base {
				t.Errorf("%s: gap %d (%s) is not longer than the early gaps (%s): no backoff", what, i+1, g[i], base)
			}
		}
		if last := g[len(g)-1]; last < 2*base {
			t.Errorf("%s: the last gap %s is less than twice the early gaps (%s): no exponential backoff", what, last, base)
		}
	}

	// 1. 503: the spec moves to v2 while the registry answers 503 to everything.
	attempts.next("503", func() { reg.Fail(http.StatusServiceUnavailable, "") })
	cat = get()
	cat.Spec.Source.Image.Ref = ref2
	if err := suite.Client.Update(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	all := waitExactly(t, "503", 9, fmt.Sprintf(
		`generation 2: registry %s answered 503 Service Unavailable for image "%s"; will retry with backoff`, reg.Host, ref2))
	keepsServing(t)
	var firsts503 []time.Time
	for _, i := range complete(all, "503") {
		firsts503 = append(firsts503, first(t, all, i, 2))
	}
	g503 := gaps(firsts503)
	t.Logf("503: %d attempts of 2 requests each; gaps between attempts (first requests): %v", len(firsts503), roundAll(g503))
	growing(t, "503", g503)

	// 2. 429 without Retry-After: one request per attempt, and the backoff goes on growing (the
	// failures before count).
	attempts.next("429", func() { reg.Fail(http.StatusTooManyRequests, "") })
	all = waitExactly(t, "429", 1, fmt.Sprintf(
		`generation 2: registry %s answered 429 Too Many Requests for image "%s"; will retry with backoff`, reg.Host, ref2))
	keepsServing(t)
	j := complete(all, "429")[0]
	if all[j-1].phase != "503" || all[j-2].phase != "503" {
		t.Fatalf("the two attempts before the first 429 one are %s and %s, want 503", all[j-2].phase, all[j-1].phase)
	}
	before, last := first(t, all, j-2, 2), first(t, all, j-1, 2)
	gap429 := first(t, all, j, 1).Sub(last)
	t.Logf("429: 1 request per attempt; gap before the first 429 attempt %s, the gap before that %s",
		gap429.Round(time.Millisecond), last.Sub(before).Round(time.Millisecond))
	if gap429 <= last.Sub(before) {
		t.Errorf("the gap before the 429 attempt (%s) is not larger than the one before it (%s): the backoff did not keep growing", gap429, last.Sub(before))
	}

	// 3. 429 with Retry-After: 2: asked again 2 s later each time, instead of the backoff.
	attempts.next("retry-after", func() { reg.Fail(http.StatusTooManyRequests, "2") })
	all = waitExactly(t, "retry-after", 3, fmt.Sprintf(
		`generation 2: registry %s answered 429 Too Many Requests for image "%s"; will retry in 2s, as the server asked (Retry-After)`, reg.Host, ref2))
	keepsServing(t)
	var firstsRA []time.Time
	for _, i := range complete(all, "retry-after") {
		firstsRA = append(firstsRA, first(t, all, i, 1))
	}
	gRA := gaps(firstsRA)
	t.Logf("429 with Retry-After: 2: gaps between attempts %v", roundAll(gRA))
	for i, g := range gRA {
		if g < 2*time.Second || g > 3500*time.Millisecond {
			t.Errorf("gap %d is %s, want 2s (the Retry-After) plus one reconcile", i+1, g)
		}
	}

	// 4. Connection refused: the listener is closed. Measured from the dial attempts: one per
	// scheme (https, then http). The backoff starts again from 5 ms: the Retry-After requeue
	// forgot the failures before it.
	attempts.next("refused", reg.Stop)
	refusedPrefix := fmt.Sprintf(`generation 2: cannot reach registry %s for image "%s": `, reg.Host, ref2)
	all = waitUnpacked(t, "refused", 9, refusedPrefix+`… connection refused …; will retry with backoff`, func(msg string) bool {
		return strings.HasPrefix(msg, refusedPrefix) && strings.Contains(msg, "connect: connection refused") && strings.HasSuffix(msg, "; will retry with backoff")
	})
	keepsServing(t)
	var firstDials []time.Time
	for _, i := range complete(all, "refused") {
		times, errs := dials.between(all[i].start, all[i].end)
		if len(times) != 2 {
			t.Fatalf("refused attempt %d dialed the registry %d times, want 2 (https and http)", i+1, len(times))
		}
		for _, e := range errs {
			if !strings.Contains(e, "connection refused") {
				t.Errorf("a dial did not fail with connection refused: %s", e)
			}
		}
		if n := len(requestsBetween(reg, all[i].start, all[i].end)); n != 0 {
			t.Errorf("the closed registry got %d requests", n)
		}
		firstDials = append(firstDials, times[0])
	}
	gRefused := gaps(firstDials)
	t.Logf("refused: %d attempts of 2 dials each; gaps between attempts (first dials): %v", len(firstDials), roundAll(gRefused))
	growing(t, "connection refused", gRefused)
}
