package controller

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/controller"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// fooCatalog is a valid catalog of package foo whose latest bundle is version.
func fooCatalog(version string) map[string]string {
	return map[string]string{
		"foo/package.yaml": "schema: olm.package\nname: foo\ndefaultChannel: stable\n",
		"foo/channel.json": `{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v` + version + `"}]}`,
		"foo/bundle.yaml": `schema: olm.bundle
package: foo
name: foo.v` + version + `
image: example.com/foo:v` + version + `
properties:
- type: olm.package
  value: {packageName: foo, version: ` + version + `}
`,
	}
}

// invalidCatalog has a channel entry naming a bundle that does not exist.
func invalidCatalog() map[string]string {
	files := fooCatalog("0.3.0")
	files["foo/channel.json"] = `{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v9.9.9"}]}`
	return files
}

func newCatalog(t *testing.T, name, ref string, poll *metav1.Duration) *catalogdv1alpha1.Catalog {
	t.Helper()
	cat := &catalogdv1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: catalogdv1alpha1.CatalogSpec{Source: rukpakv1alpha1.Source{
			Type:  rukpakv1alpha1.SourceTypeImage,
			Image: &rukpakv1alpha1.ImageSource{Ref: ref, PollInterval: poll},
		}},
	}
	if err := env.client.Create(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.client.Delete(t.Context(), cat)
	})
	return cat
}

func setRef(t *testing.T, name, ref string) int64 {
	t.Helper()
	cat := &catalogdv1alpha1.Catalog{}
	if err := env.client.Get(t.Context(), client.ObjectKey{Name: name}, cat); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cat.DeepCopy())
	cat.Spec.Source.Image.Ref = ref
	if err := env.client.Patch(t.Context(), cat, patch); err != nil {
		t.Fatal(err)
	}
	return cat.Generation
}

// want describes the status a test waits for.
type want struct {
	generation       int64
	unpacked         metav1.ConditionStatus
	unpackedReason   string
	unpackedMessage  string // substring
	serving          metav1.ConditionStatus
	servingReason    string
	servingMessage   string // substring
	servedGeneration int64
}

func condMatches(c *metav1.Condition, status metav1.ConditionStatus, reason, msg string, gen int64) bool {
	return c != nil && c.Status == status && c.Reason == reason && strings.Contains(c.Message, msg) && c.ObservedGeneration == gen
}

func waitFor(t *testing.T, name string, w want) *catalogdv1alpha1.Catalog {
	t.Helper()
	cat := &catalogdv1alpha1.Catalog{}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := env.client.Get(t.Context(), client.ObjectKey{Name: name}, cat); err != nil {
			t.Fatal(err)
		}
		u := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypeUnpacked)
		s := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypeServing)
		if cat.Status.ObservedGeneration == w.generation &&
			condMatches(u, w.unpacked, w.unpackedReason, w.unpackedMessage, w.generation) &&
			condMatches(s, w.serving, w.servingReason, w.servingMessage, w.generation) &&
			cat.Status.ServedGeneration == w.servedGeneration {
			return cat
		}
		if time.Now().After(deadline) {
			t.Fatalf("catalog %s did not reach %+v; status:\n%s", name, w, statusString(cat))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func statusString(cat *catalogdv1alpha1.Catalog) string {
	var b strings.Builder
	fmt.Fprintf(&b, "generation %d observed %d served %d hash %s\n", cat.Generation, cat.Status.ObservedGeneration, cat.Status.ServedGeneration, cat.Status.ContentHash)
	for _, c := range cat.Status.Conditions {
		fmt.Fprintf(&b, "  %s=%s %s (gen %d): %s\n", c.Type, c.Status, c.Reason, c.ObservedGeneration, c.Message)
	}
	return b.String()
}

func servingOK(gen int64) want {
	return want{generation: gen, unpacked: metav1.ConditionTrue, unpackedReason: catalogdv1alpha1.ReasonUnpackSucceeded,
		serving: metav1.ConditionTrue, servingReason: catalogdv1alpha1.ReasonServing, servedGeneration: gen}
}

func httpGet(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("ETag"), string(b)
}

// TestConditionsStaleServingAndHashABA walks a Catalog through every condition transition:
// Pending → Succeeded/Serving (A) → B → InvalidCatalog while still serving B → UnpackFailed while
// still serving B → A again, with the same hash as the first time.
func TestConditionsStaleServingAndHashABA(t *testing.T) {
	const name = "transitions"
	push("reg.test/cat:0.1.0", fooCatalog("0.1.0"))
	push("reg.test/cat:0.2.0", fooCatalog("0.2.0"))
	push("reg.test/cat:broken", invalidCatalog())

	newCatalog(t, name, "reg.test/cat:0.1.0", nil)
	cat := waitFor(t, name, servingOK(1))
	hashA := cat.Status.ContentHash
	if !strings.HasPrefix(hashA, "sha256:") || cat.Status.Counts == nil || *cat.Status.Counts != (catalogdv1alpha1.CatalogCounts{Packages: 1, Channels: 1, Bundles: 1}) {
		t.Errorf("status after the first unpack: %+v", cat.Status)
	}
	if cat.Status.ResolvedSource == nil || !strings.HasPrefix(cat.Status.ResolvedSource.Image.Ref, "reg.test/cat:0.1.0@sha256:") || cat.Status.LastUnpacked == nil {
		t.Errorf("resolvedSource/lastUnpacked: %+v", cat.Status)
	}
	if !slices.Contains(cat.Finalizers, controller.Finalizer) {
		t.Errorf("finalizers = %v", cat.Finalizers)
	}
	if want := env.http.URL + "/catalogs/" + name + "/all.json"; cat.Status.ContentURL != want {
		t.Errorf("contentURL = %q, want %q", cat.Status.ContentURL, want)
	}
	code, etag, body := httpGet(t, cat.Status.ContentURL)
	if code != 200 || etag != `"`+hashA+`"` || !strings.Contains(body, `"name":"foo.v0.1.0"`) {
		t.Errorf("GET contentURL: %d %s %q", code, etag, body)
	}

	gen := setRef(t, name, "reg.test/cat:0.2.0")
	cat = waitFor(t, name, servingOK(gen))
	hashB := cat.Status.ContentHash
	if hashB == hashA {
		t.Fatalf("0.1.0 and 0.2.0 have the same hash %s", hashA)
	}

	// A failing update keeps serving B and says so.
	gen = setRef(t, name, "reg.test/cat:broken")
	cat = waitFor(t, name, want{generation: gen,
		unpacked: metav1.ConditionFalse, unpackedReason: catalogdv1alpha1.ReasonInvalidCatalog, unpackedMessage: "not a valid file-based catalog: package \"foo\"",
		serving: metav1.ConditionTrue, servingReason: catalogdv1alpha1.ReasonServingPreviousContent, servingMessage: fmt.Sprintf("generation %d", gen-1),
		servedGeneration: gen - 1})
	if cat.Status.ContentHash != hashB || !strings.HasPrefix(cat.Status.ResolvedSource.Image.Ref, "reg.test/cat:0.2.0@") {
		t.Errorf("stale status does not describe the served content B: %+v", cat.Status)
	}
	if code, etag, body := httpGet(t, cat.Status.ContentURL); code != 200 || etag != `"`+hashB+`"` || !strings.Contains(body, "foo.v0.2.0") {
		t.Errorf("served content after a failed update: %d %s", code, etag)
	}

	gen = setRef(t, name, "reg.test/cat:does-not-exist")
	waitFor(t, name, want{generation: gen,
		unpacked: metav1.ConditionFalse, unpackedReason: catalogdv1alpha1.ReasonUnpackFailed, unpackedMessage: "not found",
		serving: metav1.ConditionTrue, servingReason: catalogdv1alpha1.ReasonServingPreviousContent,
		servedGeneration: gen - 2})

	gen = setRef(t, name, "reg.test/cat:0.1.0")
	cat = waitFor(t, name, servingOK(gen))
	if cat.Status.ContentHash != hashA {
		t.Errorf("back to 0.1.0: hash %s, want %s (A/B/A)", cat.Status.ContentHash, hashA)
	}

	// Metrics: unpack results and content size.
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]uint64{}
	var contentBytes float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetName() {
			case "catalogd_unpack_duration_seconds":
				results[labels["result"]] += m.GetHistogram().GetSampleCount()
			case "catalogd_content_bytes":
				if labels["catalog"] == name {
					contentBytes = m.GetGauge().GetValue()
				}
			}
		}
	}
	if results["success"] < 3 || results["invalid_catalog"] < 1 || results["unpack_failed"] < 1 {
		t.Errorf("catalogd_unpack_duration_seconds counts by result: %v", results)
	}
	if contentBytes <= 0 {
		t.Errorf("catalogd_content_bytes{catalog=%q} = %v", name, contentBytes)
	}

	// Every state change was reported as an Event.
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs := &eventsv1.EventList{}
		if err := env.client.List(t.Context(), evs, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		reasons := map[string]bool{}
		for _, e := range evs.Items {
			if e.Regarding.Name == name {
				reasons[e.Reason] = true
			}
		}
		missing := []string{}
		for _, r := range []string{catalogdv1alpha1.ReasonUnpackSucceeded, catalogdv1alpha1.ReasonServing, catalogdv1alpha1.ReasonInvalidCatalog,
			catalogdv1alpha1.ReasonUnpackFailed, catalogdv1alpha1.ReasonServingPreviousContent} {
			if !reasons[r] {
				missing = append(missing, r)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("no Event with reason %v (got %v)", missing, reasons)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestPendingWhileUnpacking: a slow unpack shows Unpacked=False/Pending first; after an update
// it shows Pending for the new generation while the previous content is still served.
func TestPendingWhileUnpacking(t *testing.T) {
	const name = "pending"
	push("reg.test/slow:1", fooCatalog("1.0.0"))
	push("reg.test/slow:2", fooCatalog("2.0.0"))
	release := env.registry.Block("reg.test/slow:1")
	newCatalog(t, name, "reg.test/slow:1", nil)
	waitFor(t, name, want{generation: 1,
		unpacked: metav1.ConditionFalse, unpackedReason: catalogdv1alpha1.ReasonPending, unpackedMessage: "unpacking generation 1",
		serving: metav1.ConditionFalse, servingReason: catalogdv1alpha1.ReasonNotServing})
	release()
	waitFor(t, name, servingOK(1))

	release = env.registry.Block("reg.test/slow:2")
	gen := setRef(t, name, "reg.test/slow:2")
	waitFor(t, name, want{generation: gen,
		unpacked: metav1.ConditionFalse, unpackedReason: catalogdv1alpha1.ReasonPending,
		serving: metav1.ConditionTrue, servingReason: catalogdv1alpha1.ReasonServingPreviousContent, servedGeneration: 1})
	release()
	waitFor(t, name, servingOK(gen))
}

// TestCatalogGetsItsNameLabel: catalogd labels every Catalog with its own name
// (olm.operatorframework.io/metadata.name), and puts the label back when a user changes or removes it.
func TestCatalogGetsItsNameLabel(t *testing.T) {
	const name = "name-label"
	push("reg.test/name-label:1", fooCatalog("1.0.0"))
	newCatalog(t, name, "reg.test/name-label:1", nil)
	waitLabel := func(what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			cat := &catalogdv1alpha1.Catalog{}
			if err := env.client.Get(t.Context(), client.ObjectKey{Name: name}, cat); err != nil {
				t.Fatal(err)
			}
			if cat.Labels[catalogdv1alpha1.LabelMetadataName] == name {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: labels %v, want %s=%s", what, cat.Labels, catalogdv1alpha1.LabelMetadataName, name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitLabel("a new Catalog")
	waitFor(t, name, servingOK(1))

	for _, value := range []string{"someone-else", ""} {
		cat := &catalogdv1alpha1.Catalog{}
		if err := env.client.Get(t.Context(), client.ObjectKey{Name: name}, cat); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(cat.DeepCopy())
		if value == "" {
			delete(cat.Labels, catalogdv1alpha1.LabelMetadataName)
		} else {
			cat.Labels[catalogdv1alpha1.LabelMetadataName] = value
		}
		if err := env.client.Patch(t.Context(), cat, patch); err != nil {
			t.Fatal(err)
		}
		waitLabel(fmt.Sprintf("after the label was set to %q", value))
	}
}

// TestInvalidFirstContentIsNotServed: a Catalog whose first content is invalid serves nothing.
func TestInvalidFirstContentIsNotServed(t *testing.T) {
	const name = "invalid-first"
	push("reg.test/invalid:1", map[string]string{"bad.yaml": "schema: olm.package\nname: [oops\n"})
	newCatalog(t, name, "reg.test/invalid:1", nil)
	waitFor(t, name, want{generation: 1,
		unpacked: metav1.ConditionFalse, unpackedReason: catalogdv1alpha1.ReasonInvalidCatalog, unpackedMessage: "bad.yaml",
		serving: metav1.ConditionFalse, servingReason: catalogdv1alpha1.ReasonNotServing})
	if code, _, _ := httpGet(t, env.http.URL+"/catalogs/"+name+"/all.json"); code != http.StatusNotFound {
		t.Errorf("GET all.json of a never-unpacked catalog: %d", code)
	}
}

// TestPollingPicksUpRepushedTag: with pollInterval, a re-pushed tag is unpacked; an unchanged tag
// is not fetched again.
func TestPollingPicksUpRepushedTag(t *testing.T) {
	const name = "polling"
	const ref = "reg.test/poll:latest"
	key := "catalog/" + name
	push(ref, fooCatalog("1.0.0"))
	newCatalog(t, name, ref, &metav1.Duration{Duration: time.Second})
	cat := waitFor(t, name, servingOK(1))
	hash1, last1 := cat.Status.ContentHash, cat.Status.LastUnpacked

	polls := env.registry.Calls(key).Unpacks
	eventually(t, "the tag is polled three more times", func() bool { return env.registry.Calls(key).Unpacks >= polls+3 })
	if n := env.registry.Calls(key).Fetches; n != 1 {
		t.Errorf("unchanged tag fetched %d times, want 1", n)
	}
	cat = waitFor(t, name, servingOK(1))
	if !cat.Status.LastUnpacked.Equal(last1) {
		t.Errorf("lastUnpacked moved without new content: %v → %v", last1, cat.Status.LastUnpacked)
	}

	push(ref, fooCatalog("1.1.0"))
	deadline := time.Now().Add(20 * time.Second)
	for cat.Status.ContentHash == hash1 {
		if time.Now().After(deadline) {
			t.Fatalf("the re-pushed tag was not picked up:\n%s", statusString(cat))
		}
		time.Sleep(200 * time.Millisecond)
		if err := env.client.Get(t.Context(), client.ObjectKey{Name: name}, cat); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypeServing).Message, cat.Status.ContentHash) {
		t.Errorf("Serving does not name the new hash:\n%s", statusString(cat))
	}
}

// TestDeletionCleansUp: deleting a Catalog removes its stored content, its unpacked source and
// then the object.
func TestDeletionCleansUp(t *testing.T) {
	const name = "deleted"
	push("reg.test/del:1", fooCatalog("1.0.0"))
	cat := newCatalog(t, name, "reg.test/del:1", nil)
	waitFor(t, name, servingOK(1))
	if _, err := os.Stat(filepath.Join(env.storeDir, name)); err != nil {
		t.Fatalf("no stored content before deletion: %v", err)
	}
	if err := env.client.Delete(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := env.client.Get(t.Context(), client.ObjectKey{Name: name}, &catalogdv1alpha1.Catalog{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("catalog not deleted: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(env.storeDir, name)); !os.IsNotExist(err) {
		t.Errorf("stored content remains: %v", err)
	}
	if _, ok := env.store.Get(name); ok {
		t.Error("the store still serves the deleted catalog")
	}
	if !slices.Contains(env.registry.Cleanups(), "catalog/"+name) {
		t.Error("the unpacked source was not cleaned up")
	}
	if code, _, _ := httpGet(t, env.http.URL+"/catalogs/"+name+"/all.json"); code != http.StatusNotFound {
		t.Errorf("GET all.json after deletion: %d", code)
	}
}

// TestOrphanedContentRemoved: content stored for a catalog that does not exist (see TestMain) is
// removed at start-up.
func TestOrphanedContentRemoved(t *testing.T) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, ok := env.store.Get("orphan")
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the orphaned content is still stored")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(env.storeDir, "orphan")); !os.IsNotExist(err) {
		t.Errorf("orphaned content directory remains: %v", err)
	}
}
