package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// patchSpec changes the Catalog's spec (and annotations) with change and returns the new generation.
func patchSpec(t *testing.T, name string, change func(*catalogdv1alpha1.Catalog)) int64 {
	t.Helper()
	cat := getCatalog(t, name)
	patch := client.MergeFrom(cat.DeepCopy())
	change(cat)
	if err := env.client.Patch(t.Context(), cat, patch); err != nil {
		t.Fatal(err)
	}
	return cat.Generation
}

func setSpecPaused(t *testing.T, name string, paused bool) int64 {
	t.Helper()
	return patchSpec(t, name, func(c *catalogdv1alpha1.Catalog) { c.Spec.Paused = paused })
}

// waitPausedObserved waits until the controller has reconciled generation gen of a paused Catalog
// (its Paused condition is True and names gen) and returns the Catalog.
func waitPausedObserved(t *testing.T, name string, gen int64) *catalogdv1alpha1.Catalog {
	t.Helper()
	var cat *catalogdv1alpha1.Catalog
	eventually(t, fmt.Sprintf("catalog %s is Paused at generation %d", name, gen), func() bool {
		cat = getCatalog(t, name)
		c := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypePaused)
		return condMatches(c, metav1.ConditionTrue, catalogdv1alpha1.ReasonPaused, "paused since ", gen)
	})
	return cat
}

// reconcileWhilePaused gives the controller n reconcile opportunities and waits until it has taken
// each: every round changes an annotation and spec.priority (a spec change that must not be acted
// on) and waits until the Paused condition names the new generation. Each of those reconciles
// reads the source afresh if it unpacks at all, so one that unpacked would see every change made
// before the round.
func reconcileWhilePaused(t *testing.T, name string, n int) {
	t.Helper()
	for i := range n {
		gen := patchSpec(t, name, func(c *catalogdv1alpha1.Catalog) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations["test.catalogd.operatorframework.io/nudge"] = fmt.Sprint(i)
			c.Spec.Priority++
		})
		waitPausedObserved(t, name, gen)
	}
}

// consistently checks cond every 100 ms for d and fails at the first time it does not hold.
func consistently(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if ok, got := cond(); !ok {
			t.Fatalf("not %s: %s", what, got)
		}
	}
}

// assertServing checks that the content endpoint serves hash and a body that contains bundle.
func assertServing(t *testing.T, url, hash, bundle string) {
	t.Helper()
	code, etag, body := httpGet(t, url)
	if code != 200 || etag != `"`+hash+`"` || !strings.Contains(body, bundle) {
		t.Fatalf("GET %s: %d, ETag %s, contains %s: %v; want 200, ETag %q", url, code, etag, bundle, strings.Contains(body, bundle), hash)
	}
}

func pausedEvents(t *testing.T, name string) int {
	t.Helper()
	evs := &eventsv1.EventList{}
	if err := env.client.List(t.Context(), evs, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs.Items {
		if e.Regarding.Name == name && e.Reason == catalogdv1alpha1.ReasonPaused {
			n++
			if !strings.Contains(e.Note, "paused since ") || e.Type != corev1.EventTypeNormal {
				t.Errorf("Paused event: %s %s", e.Type, e.Note)
			}
		}
	}
	return n
}

// TestPausedImageCatalogIsNotPolledOrUnpacked: a serving Catalog of an image tag polled every
// second is paused; neither the poll nor a new image ref, nor priority and annotation changes,
// make it fetch anything while the old content stays served; resuming unpacks the new ref at once.
// Deleting a paused Catalog removes its content.
func TestPausedImageCatalogIsNotPolledOrUnpacked(t *testing.T) {
	const name = "paused-image"
	key := "catalog/" + name
	push("reg.test/paused:v1", fooCatalog("1.0.0"))
	push("reg.test/paused:v2", fooCatalog("2.0.0"))
	newCatalog(t, name, "reg.test/paused:v1", &metav1.Duration{Duration: time.Second})
	cat := waitFor(t, name, servingOK(1))
	hash1 := cat.Status.ContentHash
	if c := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypePaused); !condMatches(c, metav1.ConditionFalse, catalogdv1alpha1.ReasonNotPaused, "not paused", 1) {
		t.Errorf("Paused before the pause: %+v", c)
	}
	polls := env.registry.Calls(key).Unpacks
	eventually(t, "the tag is polled twice more", func() bool { return env.registry.Calls(key).Unpacks >= polls+2 })

	gen := setSpecPaused(t, name, true)
	cat = waitPausedObserved(t, name, gen)
	before := cat.DeepCopy()
	p := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypePaused)
	if want := fmt.Sprintf("the content of generation 1 (%s) stays served as it is", hash1); !strings.Contains(p.Message, want) {
		t.Errorf("Paused message %q does not say %q", p.Message, want)
	}
	unpacks := env.registry.Calls(key).Unpacks

	// A new ref (a spec change) and three more spec changes: each reconciled, none acted on.
	gen = patchSpec(t, name, func(c *catalogdv1alpha1.Catalog) { c.Spec.Source.Image.Ref = "reg.test/paused:v2" })
	waitPausedObserved(t, name, gen)
	reconcileWhilePaused(t, name, 3)
	// Three poll intervals more: no poll either.
	consistently(t, 3*time.Second, "left alone while paused", func() (bool, string) {
		cur := getCatalog(t, name)
		n := env.registry.Calls(key).Unpacks
		return n == unpacks && cur.Status.ContentHash == hash1 && cur.Status.ObservedGeneration == 1 && cur.Status.ServedGeneration == 1,
			fmt.Sprintf("%d unpack calls (%d when paused)\n%s", n, unpacks, statusString(cur))
	})
	cat = getCatalog(t, name)
	for _, typ := range []string{catalogdv1alpha1.TypeUnpacked, catalogdv1alpha1.TypeServing, catalogdv1alpha1.TypePaused} {
		if b, a := meta.FindStatusCondition(before.Status.Conditions, typ), meta.FindStatusCondition(cat.Status.Conditions, typ); a.Status != b.Status ||
			a.Reason != b.Reason || a.Message != b.Message || !a.LastTransitionTime.Equal(&b.LastTransitionTime) {
			t.Errorf("%s changed while paused: %+v → %+v", typ, b, a)
		}
	}
	assertServing(t, cat.Status.ContentURL, hash1, "foo.v1.0.0")

	// Resume: the new ref is unpacked at once and served; polling starts again.
	gen = setSpecPaused(t, name, false)
	cat = waitFor(t, name, servingOK(gen))
	if cat.Status.ContentHash == hash1 || cat.Status.ResolvedSource.Image == nil || !strings.HasPrefix(cat.Status.ResolvedSource.Image.Ref, "reg.test/paused:v2@") {
		t.Fatalf("resumed without unpacking the new ref:\n%s", statusString(cat))
	}
	if c := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypePaused); !condMatches(c, metav1.ConditionFalse, catalogdv1alpha1.ReasonNotPaused, "", gen) {
		t.Errorf("Paused after resuming: %+v", c)
	}
	assertServing(t, cat.Status.ContentURL, cat.Status.ContentHash, "foo.v2.0.0")
	polls = env.registry.Calls(key).Unpacks
	eventually(t, "the tag is polled again after resuming", func() bool { return env.registry.Calls(key).Unpacks >= polls+2 })
	eventually(t, "one Paused event was emitted", func() bool { return pausedEvents(t, name) == 1 })

	// Deleting a paused Catalog removes its content.
	waitPausedObserved(t, name, setSpecPaused(t, name, true))
	if err := env.client.Delete(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the paused Catalog is deleted", func() bool {
		return apierrors.IsNotFound(env.client.Get(t.Context(), client.ObjectKey{Name: name}, &catalogdv1alpha1.Catalog{}))
	})
	if _, ok := env.store.Get(name); ok {
		t.Error("the store still serves the deleted paused catalog")
	}
}

// TestPausedConfigMapCatalogKeepsServing: a paused Catalog whose ConfigMap is edited keeps serving
// the old content through several reconciles (a reconcile that unpacked would read the edited
// ConfigMap straight from the API server); content lost from the store during the pause (as after
// a restart on an empty store) is loaded again as the status names it; resuming serves the edit.
func TestPausedConfigMapCatalogKeepsServing(t *testing.T) {
	const name = "paused-configmaps"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "paused-content", Namespace: namespace}, Data: map[string]string{}}
	for k, v := range fooCatalog("1.0.0") {
		cm.Data[strings.ReplaceAll(k, "/", "_")] = v
	}
	if err := env.client.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.client.Delete(t.Context(), cm) })
	createCatalog(t, name, rukpakv1alpha1.Source{
		Type:       rukpakv1alpha1.SourceTypeConfigMaps,
		ConfigMaps: []rukpakv1alpha1.ConfigMapSource{{ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: cm.Name}, Path: "configs"}},
	})
	cat := waitFor(t, name, servingOK(1))
	hash1 := cat.Status.ContentHash
	assertServing(t, cat.Status.ContentURL, hash1, "foo.v1.0.0")

	waitPausedObserved(t, name, setSpecPaused(t, name, true))

	// The store loses the content while paused: the next reconcile loads what the status names.
	if err := env.store.Delete(name); err != nil {
		t.Fatal(err)
	}
	reconcileWhilePaused(t, name, 1)
	eventually(t, "the content the status names is served again", func() bool {
		c, ok := env.store.Get(name)
		return ok && c.Hash == hash1
	})
	assertServing(t, cat.Status.ContentURL, hash1, "foo.v1.0.0")

	// Edit the ConfigMap: neither its watch event nor three reconciles after it unpack it.
	patch := client.MergeFrom(cm.DeepCopy())
	for k, v := range fooCatalog("1.1.0") {
		cm.Data[strings.ReplaceAll(k, "/", "_")] = v
	}
	if err := env.client.Patch(t.Context(), cm, patch); err != nil {
		t.Fatal(err)
	}
	reconcileWhilePaused(t, name, 3)
	consistently(t, time.Second, "serving the old content while paused", func() (bool, string) {
		cur := getCatalog(t, name)
		c, ok := env.store.Get(name)
		return ok && c.Hash == hash1 && cur.Status.ContentHash == hash1 && cur.Status.ObservedGeneration == 1,
			fmt.Sprintf("store has %v\n%s", ok && c.Hash == hash1, statusString(cur))
	})
	cat = getCatalog(t, name)
	if s := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypeServing); !condMatches(s, metav1.ConditionTrue, catalogdv1alpha1.ReasonServing, hash1, 1) {
		t.Errorf("Serving changed while paused: %+v", s)
	}
	assertServing(t, cat.Status.ContentURL, hash1, "foo.v1.0.0")

	// Resume: the edited ConfigMap is unpacked at once (ConfigMaps are not polled).
	gen := setSpecPaused(t, name, false)
	cat = waitFor(t, name, servingOK(gen))
	if cat.Status.ContentHash == hash1 {
		t.Fatalf("resumed without unpacking the edited ConfigMap:\n%s", statusString(cat))
	}
	assertServing(t, cat.Status.ContentURL, cat.Status.ContentHash, "foo.v1.1.0")
}
