package metadataapi

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/fbc"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
)

// These tests run the API's storage over catalogd's real on-disk store: "replicas" are instances
// over separate directories holding the same content, a "restart" is a new instance over the same
// directory.

// fbcCatalog is a valid catalog of package pkg with one bundle per version, in channel stable in
// that order.
func fbcCatalog(t *testing.T, pkg string, versions ...string) *fbc.Catalog {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "schema: olm.package\nname: %s\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: %s\nname: stable\nentries:\n", pkg, pkg)
	for i, v := range versions {
		fmt.Fprintf(&b, "- name: %s.v%s\n", pkg, v)
		if i > 0 {
			fmt.Fprintf(&b, "  replaces: %s.v%s\n", pkg, versions[i-1])
		}
	}
	for _, v := range versions {
		fmt.Fprintf(&b, "---\nschema: olm.bundle\npackage: %s\nname: %s.v%s\nimage: example.com/%s:v%s\nproperties:\n- type: olm.package\n  value: {packageName: %s, version: %s}\n",
			pkg, pkg, v, pkg, v, pkg, v)
	}
	c, err := fbc.Load(t.Context(), fstest.MapFS{"catalog.yaml": &fstest.MapFile{Data: []byte(b.String())}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// replica is one catalogd process's view: its store and the API storage over it.
type replica struct {
	dir   string
	store *storage.Store
	hub   *Hub
	rest  *REST
}

func startReplica(t *testing.T, dir string) *replica {
	t.Helper()
	store, err := storage.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	hub, err := NewHub(StoreReader{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return &replica{dir: dir, store: store, hub: hub, rest: NewREST(hub)}
}

// put stores content and lets the API see it, as Follow does on the store's event.
func (r *replica) put(t *testing.T, catalog string, c *fbc.Catalog) {
	t.Helper()
	if _, err := r.store.Put(catalog, c); err != nil {
		t.Fatal(err)
	}
	if err := r.hub.Notify(catalog); err != nil {
		t.Fatal(err)
	}
}

func (r *replica) list(t *testing.T, opts metainternalversion.ListOptions) *metadatav1alpha1.CatalogMetadataList {
	t.Helper()
	obj, err := r.rest.List(context.Background(), &opts)
	if err != nil {
		t.Fatalf("list %+v: %v", opts, err)
	}
	return obj.(*metadatav1alpha1.CatalogMetadataList)
}

func (r *replica) watch(t *testing.T, opts metainternalversion.ListOptions) watch.Interface {
	t.Helper()
	opts.Watch = true
	w, err := r.rest.Watch(context.Background(), &opts)
	if err != nil {
		t.Fatalf("watch %+v: %v", opts, err)
	}
	t.Cleanup(w.Stop)
	return w
}

// versions maps object names to resourceVersions.
func versions(l *metadatav1alpha1.CatalogMetadataList) map[string]string {
	out := map[string]string{}
	for _, i := range l.Items {
		out[i.Name] = i.ResourceVersion
	}
	return out
}

// next receives one event, failing after a timeout.
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for a watch event")
	}
	return watch.Event{}
}

// eventsUntilBookmark collects "TYPE spec.name" of the events before the next bookmark, and the
// bookmark's resourceVersion.
func eventsUntilBookmark(t *testing.T, w watch.Interface) ([]string, string) {
	t.Helper()
	var got []string
	for {
		ev := next(t, w)
		m := ev.Object.(*metadatav1alpha1.CatalogMetadata)
		if ev.Type == watch.Bookmark {
			return got, m.ResourceVersion
		}
		got = append(got, string(ev.Type)+" "+m.Spec.Name)
	}
}

// twoReplicas serves the same content from two directories, stored in different orders and, on B,
// through an intermediate version of alpha: only the content counts.
func twoReplicas(t *testing.T) (a, b *replica) {
	a, b = startReplica(t, t.TempDir()), startReplica(t, t.TempDir())
	a.put(t, "alpha", fbcCatalog(t, "foo", "1.0.0", "1.1.0"))
	a.put(t, "beta", fbcCatalog(t, "bar", "2.0.0"))
	b.put(t, "beta", fbcCatalog(t, "bar", "2.0.0"))
	b.put(t, "alpha", fbcCatalog(t, "foo", "0.9.0"))
	b.put(t, "alpha", fbcCatalog(t, "foo", "1.0.0", "1.1.0"))
	return a, b
}

func TestVersionsAreTheSameOnEveryReplicaAndAfterARestart(t *testing.T) {
	a, b := twoReplicas(t)
	la, lb := a.list(t, metainternalversion.ListOptions{}), b.list(t, metainternalversion.ListOptions{})
	if la.ResourceVersion != lb.ResourceVersion {
		t.Fatalf("list resourceVersion %q on A, %q on B for the same content", la.ResourceVersion, lb.ResourceVersion)
	}
	if fmt.Sprint(versions(la)) != fmt.Sprint(versions(lb)) || len(la.Items) != 7 {
		t.Fatalf("objects differ:\nA %v\nB %v", versions(la), versions(lb))
	}
	restarted := startReplica(t, a.dir)
	lr := restarted.list(t, metainternalversion.ListOptions{})
	if lr.ResourceVersion != la.ResourceVersion || fmt.Sprint(versions(lr)) != fmt.Sprint(versions(la)) {
		t.Fatalf("after a restart: %q %v, before %q %v", lr.ResourceVersion, versions(lr), la.ResourceVersion, versions(la))
	}

	// A new bundle changes the list's version, the new object and the channel, and nothing else.
	a.put(t, "alpha", fbcCatalog(t, "foo", "1.0.0", "1.1.0", "1.2.0"))
	after := a.list(t, metainternalversion.ListOptions{})
	if after.ResourceVersion == la.ResourceVersion {
		t.Fatal("the list's resourceVersion did not change with the content")
	}
	before := versions(la)
	var changed []string
	for _, i := range after.Items {
		if before[i.Name] != i.ResourceVersion {
			changed = append(changed, i.Spec.Schema+" "+i.Spec.Name)
		}
	}
	if strings.Join(sorted(changed), ",") != "olm.bundle foo.v1.2.0,olm.channel stable" {
		t.Errorf("objects whose resourceVersion changed: %v", changed)
	}
	// Putting the old content back gives back the old versions.
	a.put(t, "alpha", fbcCatalog(t, "foo", "1.0.0", "1.1.0"))
	if back := a.list(t, metainternalversion.ListOptions{}); back.ResourceVersion != la.ResourceVersion || fmt.Sprint(versions(back)) != fmt.Sprint(before) {
		t.Errorf("the same content again: %q, want %q", back.ResourceVersion, la.ResourceVersion)
	}
}

func TestWatchContinuesOnAnotherReplica(t *testing.T) {
	a, b := twoReplicas(t)
	rv := a.list(t, metainternalversion.ListOptions{}).ResourceVersion
	w := b.watch(t, metainternalversion.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true,
		LabelSelector: labels.SelectorFromSet(labels.Set{"catalog": "alpha"})})

	b.put(t, "alpha", fbcCatalog(t, "foo", "1.0.0", "1.2.0"))
	got, mark := eventsUntilBookmark(t, w)
	want := []string{"ADDED foo.v1.2.0", "DELETED foo.v1.1.0", "MODIFIED stable"}
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if now := b.hub.ResourceVersion(); mark != now {
		t.Errorf("bookmark at %q, B is at %q", mark, now)
	}
	// A reaches the same state with the same change: the bookmark is a version A can continue from.
	a.put(t, "alpha", fbcCatalog(t, "foo", "1.0.0", "1.2.0"))
	if now := a.hub.ResourceVersion(); mark != now {
		t.Errorf("bookmark %q is not A's state %q after the same change", mark, now)
	}
	wa := a.watch(t, metainternalversion.ListOptions{ResourceVersion: mark, AllowWatchBookmarks: true})
	a.put(t, "beta", fbcCatalog(t, "bar", "2.0.0", "2.1.0"))
	if got, _ := eventsUntilBookmark(t, wa); strings.Join(sorted(got), ",") != "ADDED bar.v2.1.0,MODIFIED stable" {
		t.Errorf("events on A: %v", got)
	}
}

func TestWatchFromAnOlderStateSendsTheChangesSince(t *testing.T) {
	a, b := twoReplicas(t)
	rv := a.list(t, metainternalversion.ListOptions{}).ResourceVersion
	// B moves on twice before the client comes back; it retains both steps.
	b.put(t, "alpha", fbcCatalog(t, "foo", "1.0.0", "1.1.0", "1.2.0"))
	b.put(t, "alpha", fbcCatalog(t, "foo", "1.1.0", "1.2.0", "1.3.0"))
	w := b.watch(t, metainternalversion.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	got, mark := eventsUntilBookmark(t, w)
	want := "ADDED foo.v1.2.0,ADDED foo.v1.3.0,DELETED foo.v1.0.0,MODIFIED stable"
	if strings.Join(sorted(got), ",") != want {
		t.Errorf("changes since the list: %v, want %s", got, want)
	}
	if mark != b.hub.ResourceVersion() {
		t.Errorf("bookmark %q, current %q", mark, b.hub.ResourceVersion())
	}
	// The replayed objects carry their content and the resourceVersions a list gives them.
	l := versions(b.list(t, metainternalversion.ListOptions{}))
	w2 := b.watch(t, metainternalversion.ListOptions{ResourceVersion: rv})
	for i := 0; i < 4; i++ {
		m := next(t, w2).Object.(*metadatav1alpha1.CatalogMetadata)
		if m.Spec.Name != "foo.v1.0.0" && (len(m.Spec.Content.Raw) == 0 || l[m.Name] != m.ResourceVersion) {
			t.Errorf("replayed %s: resourceVersion %q (list: %q), %d bytes of content", m.Name, m.ResourceVersion, l[m.Name], len(m.Spec.Content.Raw))
		}
	}
}

func TestWatchAfterARestart(t *testing.T) {
	dir := t.TempDir()
	first := startReplica(t, dir)
	first.put(t, "alpha", fbcCatalog(t, "foo", "1.0.0"))
	rv := first.list(t, metainternalversion.ListOptions{}).ResourceVersion

	// Restarted over the same store: the list's version is this process's current state.
	second := startReplica(t, dir)
	w := second.watch(t, metainternalversion.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	second.put(t, "alpha", fbcCatalog(t, "foo", "1.0.0", "1.1.0"))
	if got, _ := eventsUntilBookmark(t, w); strings.Join(sorted(got), ",") != "ADDED foo.v1.1.0,MODIFIED stable" {
		t.Errorf("events after the restart: %v", got)
	}

	// Content that changed while catalogd was down: the old version is not retained by the new process.
	third := startReplica(t, dir)
	_, err := third.rest.Watch(context.Background(), &metainternalversion.ListOptions{ResourceVersion: rv})
	assertGone(t, err)
}

func TestWatchFromOtherContentIsGone(t *testing.T) {
	a, _ := twoReplicas(t)
	other := startReplica(t, t.TempDir())
	other.put(t, "alpha", fbcCatalog(t, "foo", "3.0.0"))
	otherRV := other.list(t, metainternalversion.ListOptions{}).ResourceVersion
	_, err := a.rest.Watch(context.Background(), &metainternalversion.ListOptions{ResourceVersion: otherRV})
	assertGone(t, err)
	_, err = a.rest.List(context.Background(), &metainternalversion.ListOptions{ResourceVersion: otherRV})
	assertGone(t, err)

	// From the future: B has content A does not have yet. Once A's store has it, A catches up on
	// the request and continues.
	_, b := twoReplicas(t)
	b.put(t, "gamma", fbcCatalog(t, "baz", "1.0.0"))
	future := b.list(t, metainternalversion.ListOptions{}).ResourceVersion
	_, err = a.rest.Watch(context.Background(), &metainternalversion.ListOptions{ResourceVersion: future})
	assertGone(t, err)
	if _, err := a.store.Put("gamma", fbcCatalog(t, "baz", "1.0.0")); err != nil {
		t.Fatal(err)
	}
	a.watch(t, metainternalversion.ListOptions{ResourceVersion: future})

	// An object's resourceVersion is not a state; a counter of an older catalogd neither.
	item := a.list(t, metainternalversion.ListOptions{}).Items[0].ResourceVersion
	_, err = a.rest.Watch(context.Background(), &metainternalversion.ListOptions{ResourceVersion: item})
	assertGone(t, err)
	_, err = a.rest.Watch(context.Background(), &metainternalversion.ListOptions{ResourceVersion: "42"})
	assertGone(t, err)
}

func TestPaginatedListContinuesOnAnotherReplicaAndAfterARestart(t *testing.T) {
	a, b := twoReplicas(t)
	all := a.list(t, metainternalversion.ListOptions{})
	want := names(all)
	// Page 1 on A, page 2 on B, page 3 on A restarted, page 4 on B.
	servers := []*REST{a.rest, b.rest, startReplica(t, a.dir).rest, b.rest}
	var got []string
	cont := ""
	for i := 0; ; i++ {
		obj, err := servers[i%len(servers)].List(context.Background(), &metainternalversion.ListOptions{Limit: 2, Continue: cont})
		if err != nil {
			t.Fatalf("page %d: %v", i+1, err)
		}
		l := obj.(*metadatav1alpha1.CatalogMetadataList)
		if l.ResourceVersion != all.ResourceVersion {
			t.Errorf("page %d at %q, the list is at %q", i+1, l.ResourceVersion, all.ResourceVersion)
		}
		got = append(got, names(l)...)
		if cont = l.Continue; cont == "" {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("paged across replicas %v\nwant %v", got, want)
	}

	// Stopped in alpha: B changes beta (a later catalog) → 410. Stopped in beta: A changes alpha
	// (already listed) → the list continues, still at its first page's version.
	first := a.list(t, metainternalversion.ListOptions{Limit: 2})
	b.put(t, "beta", fbcCatalog(t, "bar", "2.0.0", "2.1.0"))
	_, err := b.rest.List(context.Background(), &metainternalversion.ListOptions{Limit: 2, Continue: first.Continue})
	assertGone(t, err)
	inBeta := a.list(t, metainternalversion.ListOptions{Limit: 5})
	if inBeta.Items[4].Spec.Catalog != "beta" {
		t.Fatalf("fixture: the 5th object is in %s", inBeta.Items[4].Spec.Catalog)
	}
	a.put(t, "alpha", fbcCatalog(t, "foo", "9.0.0"))
	rest := a.list(t, metainternalversion.ListOptions{Limit: 5, Continue: inBeta.Continue})
	if strings.Join(names(rest), ",") != strings.Join(want[5:], ",") || rest.ResourceVersion != inBeta.ResourceVersion {
		t.Errorf("continued after an earlier catalog changed: %v at %q, want %v at %q", names(rest), rest.ResourceVersion, want[5:], inBeta.ResourceVersion)
	}
}

func TestMalformedVersionsAndTokensAreBadRequests(t *testing.T) {
	a, _ := twoReplicas(t)
	ctx := context.Background()
	page := a.list(t, metainternalversion.ListOptions{Limit: 1})
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"watch from a resourceVersion that is not one", func() error {
			_, err := a.rest.Watch(ctx, &metainternalversion.ListOptions{ResourceVersion: "yesterday"})
			return err
		}, `invalid resourceVersion "yesterday"`},
		{"list at a resourceVersion that is not one", func() error {
			_, err := a.rest.List(ctx, &metainternalversion.ListOptions{ResourceVersion: "0123456789ABCDEF"})
			return err
		}, "16 lowercase hexadecimal digits"},
		{"continue token that is not base64url", func() error {
			_, err := a.rest.List(ctx, &metainternalversion.ListOptions{Limit: 1, Continue: "%%%"})
			return err
		}, "invalid continue token: not unpadded base64url"},
		{"continue token that is not ours", func() error {
			_, err := a.rest.List(ctx, &metainternalversion.ListOptions{Limit: 1, Continue: "e30"}) // {}
			return err
		}, "invalid continue token: format 0"},
		{"continue token with other selectors", func() error {
			_, err := a.rest.List(ctx, &metainternalversion.ListOptions{Limit: 1, Continue: page.Continue,
				FieldSelector: fields.OneTermEqualSelector("spec.catalog", "beta")})
			return err
		}, "issued for other label or field selectors"},
		{"continue token with a resourceVersion", func() error {
			_, err := a.rest.List(ctx, &metainternalversion.ListOptions{Limit: 1, Continue: page.Continue, ResourceVersion: page.ResourceVersion})
			return err
		}, "not allowed when using continue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want 400 Bad Request saying %q", err, tc.want)
			}
		})
	}
}

func TestWatchListSendsInitialEventsThenTheirEndBookmark(t *testing.T) {
	a, _ := twoReplicas(t)
	yes := true
	w := a.watch(t, metainternalversion.ListOptions{SendInitialEvents: &yes, AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, FieldSelector: fields.OneTermEqualSelector("spec.catalog", "beta")})
	var added int
	for {
		ev := next(t, w)
		m := ev.Object.(*metadatav1alpha1.CatalogMetadata)
		if ev.Type == watch.Bookmark {
			if m.Annotations[metav1.InitialEventsAnnotationKey] != "true" || m.ResourceVersion != a.hub.ResourceVersion() {
				t.Errorf("bookmark %+v", m.ObjectMeta)
			}
			break
		}
		if ev.Type != watch.Added || len(m.Spec.Content.Raw) == 0 {
			t.Errorf("initial event %s %s with %d bytes", ev.Type, m.Name, len(m.Spec.Content.Raw))
		}
		added++
	}
	if added != 3 {
		t.Errorf("%d initial events, want beta's 3 objects", added)
	}
}

// A client that falls too far behind has its watch ended; continuing from the last event it got
// either continues exactly (after a bookmark) or is 410 Gone (after an object): it never misses or
// gets an object twice.
func TestSlowWatcherContinuesWithoutLossOrDuplicates(t *testing.T) {
	r := &memReader{catalogs: map[string][]Blob{"big": demoBlobs("foo", "1.0.0")}}
	h, err := NewHub(r)
	if err != nil {
		t.Fatal(err)
	}
	rest := NewREST(h)
	last := h.ResourceVersion() // the client's version until it receives something
	w, err := rest.Watch(context.Background(), &metainternalversion.ListOptions{ResourceVersion: last, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var versions []string
	// More than twice the buffer: the watcher's goroutine holds at most one buffer's worth.
	for i := 0; i < 2*watchBuffer+500; i++ {
		versions = append(versions, fmt.Sprintf("1.%d.0", i))
	}
	r.set("big", demoBlobs("foo", versions...))
	if err := h.Notify("big"); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for ev := range w.ResultChan() { // ends: the watcher fell behind
		m := ev.Object.(*metadatav1alpha1.CatalogMetadata)
		last = m.ResourceVersion
		if ev.Type != watch.Bookmark {
			seen[m.Spec.Name]++
		}
	}
	w2, err := rest.Watch(context.Background(), &metainternalversion.ListOptions{ResourceVersion: last, AllowWatchBookmarks: true})
	if len(seen) > 0 {
		assertGone(t, err) // continuing from an object's version: list again
		return
	}
	if err != nil {
		t.Fatalf("continuing from the last bookmark: %v", err)
	}
	defer w2.Stop()
	got, _ := eventsUntilBookmark(t, w2)
	for _, g := range got {
		seen[strings.TrimPrefix(g, "ADDED ")]++
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s received %d times", name, n)
		}
	}
	if len(seen) != len(versions)-1 { // 1.0.0 was there before
		t.Errorf("received %d new objects, want %d", len(seen), len(versions)-1)
	}
}

func TestSnapshotStaysReadableAfterThePutThatReplacedIt(t *testing.T) {
	a, _ := twoReplicas(t)
	snap, ok, err := StoreReader{Store: a.store}.Open("beta")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer snap.Close()
	if _, err := a.store.Put("beta", fbcCatalog(t, "bar", "5.0.0")); err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := snap.Blobs(Filter{Schema: "olm.bundle"}, func(b Blob) error { names = append(names, b.Name); return nil }); err != nil {
		t.Fatalf("reading replaced content: %v", err)
	}
	if fmt.Sprint(names) != "[bar.v2.0.0]" {
		t.Errorf("replaced content has bundles %v", names)
	}
}

func assertGone(t *testing.T, err error) {
	t.Helper()
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("got %v, want 410 Gone (reason Expired)", err)
	}
	if s, ok := err.(apierrors.APIStatus); !ok || s.Status().Code != 410 || s.Status().Reason != metav1.StatusReasonExpired {
		t.Fatalf("status %+v, want code 410, reason Expired", err)
	}
}

func names(l *metadatav1alpha1.CatalogMetadataList) []string {
	var out []string
	for _, i := range l.Items {
		out = append(out, i.Name)
	}
	return out
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
