package metadataapi

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
)

// memReader is an in-memory ContentReader for tests.
type memReader struct {
	mu       sync.Mutex
	catalogs map[string][]Blob
	// contentReads counts the blobs its snapshots handed out with their content.
	contentReads atomic.Int64
}

func (m *memReader) Hashes() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for c, blobs := range m.catalogs {
		out[c] = memHash(blobs)
	}
	return out
}

func (m *memReader) Open(catalog string) (Snapshot, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	blobs, ok := m.catalogs[catalog]
	if !ok {
		return nil, false, nil
	}
	return &memSnapshot{hash: memHash(blobs), blobs: append([]Blob(nil), blobs...), reads: &m.contentReads}, true, nil
}

func memHash(blobs []Blob) string {
	h := sha256.New()
	for _, b := range blobs {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", b.Schema, b.Package, b.Name, b.Content)
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil))
}

// memSnapshot is one version of a memReader catalog.
type memSnapshot struct {
	hash  string
	blobs []Blob
	reads *atomic.Int64
}

func (s *memSnapshot) Hash() string { return s.hash }
func (s *memSnapshot) Close() error { return nil }

func (s *memSnapshot) Blobs(f Filter, fn func(Blob) error) error {
	for _, b := range s.blobs {
		if (f.Schema != "" && b.Schema != f.Schema) || (f.Package != "" && b.Package != f.Package) || (f.Name != "" && b.Name != f.Name) {
			continue
		}
		if f.NoContent {
			b.Content = nil
		} else if s.reads != nil {
			s.reads.Add(1)
		}
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

func (m *memReader) set(catalog string, blobs []Blob) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if blobs == nil {
		delete(m.catalogs, catalog)
		return
	}
	m.catalogs[catalog] = blobs
}

func demoBlobs(pkg string, versions ...string) []Blob {
	out := []Blob{
		{Schema: "olm.package", Package: pkg, Name: pkg, Content: []byte(fmt.Sprintf(`{"schema":"olm.package","name":%q}`, pkg))},
		{Schema: "olm.channel", Package: pkg, Name: "stable", Content: []byte(fmt.Sprintf(`{"schema":"olm.channel","package":%q,"name":"stable"}`, pkg))},
	}
	for _, v := range versions {
		out = append(out, Blob{Schema: "olm.bundle", Package: pkg, Name: pkg + ".v" + v, Content: []byte(fmt.Sprintf(`{"schema":"olm.bundle","package":%q,"name":"%s.v%s"}`, pkg, pkg, v))})
	}
	return out
}

func newTestREST(t *testing.T) (*REST, *memReader, *Hub) {
	t.Helper()
	r := &memReader{catalogs: map[string][]Blob{
		"alpha": append(demoBlobs("foo", "1.0.0", "1.1.0"), demoBlobs("bar", "2.0.0")...),
		"beta":  demoBlobs("foo", "3.0.0"),
	}}
	h, err := NewHub(r)
	if err != nil {
		t.Fatal(err)
	}
	return NewREST(h), r, h
}

func list(t *testing.T, r *REST, label, field string, limit int64, cont string) *metadatav1alpha1.CatalogMetadataList {
	t.Helper()
	opts := &metainternalversion.ListOptions{Limit: limit, Continue: cont}
	if label != "" {
		opts.LabelSelector = labels.SelectorFromSet(labels.Set(mustParseSet(t, label)))
	}
	if field != "" {
		sel, err := fields.ParseSelector(field)
		if err != nil {
			t.Fatal(err)
		}
		opts.FieldSelector = sel
	}
	obj, err := r.List(context.Background(), opts)
	if err != nil {
		t.Fatalf("List(label=%q, field=%q): %v", label, field, err)
	}
	return obj.(*metadatav1alpha1.CatalogMetadataList)
}

func mustParseSet(t *testing.T, s string) map[string]string {
	t.Helper()
	set, err := labels.ConvertSelectorToLabelsMap(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func ids(l *metadatav1alpha1.CatalogMetadataList) []string {
	var out []string
	for _, i := range l.Items {
		out = append(out, i.Spec.Catalog+"/"+i.Spec.Schema+"/"+i.Spec.Name)
	}
	return out
}

func TestListSelectors(t *testing.T) {
	r, _, _ := newTestREST(t)
	for _, tc := range []struct {
		name, label, field string
		want               []string
	}{
		{name: "everything", want: []string{
			"alpha/olm.package/foo", "alpha/olm.channel/stable", "alpha/olm.bundle/foo.v1.0.0", "alpha/olm.bundle/foo.v1.1.0",
			"alpha/olm.package/bar", "alpha/olm.channel/stable", "alpha/olm.bundle/bar.v2.0.0",
			"beta/olm.package/foo", "beta/olm.channel/stable", "beta/olm.bundle/foo.v3.0.0"}},
		{name: "labels catalog+schema", label: "catalog=alpha,schema=olm.package", want: []string{"alpha/olm.package/foo", "alpha/olm.package/bar"}},
		{name: "label package across catalogs", label: "package=foo,schema=olm.bundle", want: []string{"alpha/olm.bundle/foo.v1.0.0", "alpha/olm.bundle/foo.v1.1.0", "beta/olm.bundle/foo.v3.0.0"}},
		{name: "field name", field: "spec.name=foo.v1.1.0", want: []string{"alpha/olm.bundle/foo.v1.1.0"}},
		{name: "field catalog and schema", field: "spec.catalog=beta,spec.schema=olm.channel", want: []string{"beta/olm.channel/stable"}},
		{name: "field not-equal", field: "spec.catalog=alpha,spec.schema!=olm.bundle", want: []string{"alpha/olm.package/foo", "alpha/olm.channel/stable", "alpha/olm.package/bar", "alpha/olm.channel/stable"}},
		{name: "unknown catalog", label: "catalog=nope", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(list(t, r, tc.label, tc.field, 0, ""))
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestListPagination(t *testing.T) {
	r, reader, h := newTestREST(t)
	all := ids(list(t, r, "", "", 0, ""))
	var paged []string
	cont := ""
	pages := 0
	for {
		l := list(t, r, "", "", 3, cont)
		if len(l.Items) > 3 {
			t.Fatalf("page of %d items with limit 3", len(l.Items))
		}
		paged = append(paged, ids(l)...)
		pages++
		if l.Continue == "" {
			break
		}
		cont = l.Continue
	}
	if strings.Join(paged, ",") != strings.Join(all, ",") || pages != 4 {
		t.Fatalf("paged %d pages %v, want 4 pages of %v", pages, paged, all)
	}

	// A catalog that changes between pages expires the continue token.
	l := list(t, r, "", "", 2, "")
	reader.set("alpha", demoBlobs("foo", "9.0.0"))
	if err := h.Notify("alpha"); err != nil {
		t.Fatal(err)
	}
	_, err := r.List(context.Background(), &metainternalversion.ListOptions{Limit: 2, Continue: l.Continue})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("continue after a change: err = %v, want ResourceExpired (410)", err)
	}
}

func TestGetAndNames(t *testing.T) {
	r, _, _ := newTestREST(t)
	l := list(t, r, "", "spec.catalog=alpha,spec.name=foo.v1.0.0", 0, "")
	if len(l.Items) != 1 {
		t.Fatalf("want one object, got %v", ids(l))
	}
	name := l.Items[0].Name
	obj, err := r.Get(context.Background(), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*metadatav1alpha1.CatalogMetadata)
	if string(got.Spec.Content.Raw) != `{"schema":"olm.bundle","package":"foo","name":"foo.v1.0.0"}` {
		t.Errorf("content changed: %s", got.Spec.Content.Raw)
	}
	if got.Labels["catalog"] != "alpha" || got.Labels["schema"] != "olm.bundle" || got.Labels["package"] != "foo" || got.Labels["name"] != "foo.v1.0.0" {
		t.Errorf("labels = %v", got.Labels)
	}
	if _, err := r.Get(context.Background(), "alpha.bundle.foo.nope-0000000000", nil); !apierrors.IsNotFound(err) {
		t.Errorf("Get of a missing object: %v, want NotFound", err)
	}
}

func TestObjectNameIsValidForAnyFBCName(t *testing.T) {
	long := strings.Repeat("Very_Long Name/With:Odd*Chars", 20)
	seen := map[string]bool{}
	for _, id := range [][4]string{
		{"operatorhub", "olm.bundle", "etcd", "etcdoperator.v0.9.4"},
		{"operatorhub", "olm.bundle", "etcd", "EtcdOperator.v0.9.4"},
		{"operatorhub", "olm.deprecations", "etcd", ""},
		{"c", "my.schema", "", "Ünïcode name"},
		{"c", "olm.bundle", long, long},
	} {
		n := ObjectName(id[0], id[1], id[2], id[3])
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			t.Errorf("ObjectName%v = %q is not a valid name: %v", id, n, errs)
		}
		if seen[n] {
			t.Errorf("ObjectName%v = %q collides", id, n)
		}
		seen[n] = true
		if n != ObjectName(id[0], id[1], id[2], id[3]) {
			t.Errorf("ObjectName is not deterministic")
		}
	}
	// Labels only carry valid label values; the long name is reachable through field selectors.
	if l := objectLabels("c", "olm.bundle", long, long); l["package"] != "" || l["name"] != "" || l["catalog"] != "c" {
		t.Errorf("labels for a long name = %v", l)
	}
}

func TestWatchEvents(t *testing.T) {
	r, reader, h := newTestREST(t)
	listRV := list(t, r, "", "", 0, "").ResourceVersion
	w, err := r.Watch(context.Background(), &metainternalversion.ListOptions{
		ResourceVersion: listRV,
		LabelSelector:   labels.SelectorFromSet(labels.Set{"catalog": "alpha", "package": "foo"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// foo 1.1.0 removed, 1.2.0 added, the channel changes; bar (not selected) disappears.
	blobs := demoBlobs("foo", "1.0.0", "1.2.0")
	blobs[1].Content = []byte(`{"schema":"olm.channel","package":"foo","name":"stable","entries":[]}`)
	reader.set("alpha", blobs)
	if err := h.Notify("alpha"); err != nil {
		t.Fatal(err)
	}
	got := map[string]watch.EventType{}
	for len(got) < 3 {
		select {
		case ev := <-w.ResultChan():
			m := ev.Object.(*metadatav1alpha1.CatalogMetadata)
			got[m.Spec.Schema+"/"+m.Spec.Name] = ev.Type
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out; events so far %v", got)
		}
	}
	want := map[string]watch.EventType{"olm.bundle/foo.v1.2.0": watch.Added, "olm.bundle/foo.v1.1.0": watch.Deleted, "olm.channel/stable": watch.Modified}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", got, want)
	}

	// The catalog going away deletes everything of it.
	reader.set("alpha", nil)
	if err := h.Notify("alpha"); err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for deleted < 3 {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Deleted {
				t.Fatalf("unexpected %s", ev.Type)
			}
			deleted++
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out after %d deletions", deleted)
		}
	}
	if n := len(list(t, r, "catalog=alpha", "", 0, "").Items); n != 0 {
		t.Errorf("%d objects of a removed catalog still listed", n)
	}

	// A watch from the list's version (retained) sends the net changes since: foo's objects of alpha
	// as they are now, i.e. gone. A version no replica issued is 410 Gone.
	w1, err := r.Watch(context.Background(), &metainternalversion.ListOptions{
		ResourceVersion: listRV, LabelSelector: labels.SelectorFromSet(labels.Set{"catalog": "alpha", "package": "foo"}),
	})
	if err != nil {
		t.Fatalf("watch from a retained version: %v", err)
	}
	defer w1.Stop()
	var replayed []string
	for len(replayed) < 4 {
		select {
		case ev := <-w1.ResultChan():
			replayed = append(replayed, string(ev.Type)+" "+ev.Object.(*metadatav1alpha1.CatalogMetadata).Spec.Name)
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out; replayed so far %v", replayed)
		}
	}
	sort.Strings(replayed)
	if want := "DELETED foo,DELETED foo.v1.0.0,DELETED foo.v1.1.0,DELETED stable"; strings.Join(replayed, ",") != want {
		t.Errorf("replayed %v, want %s", replayed, want)
	}
	if _, err := r.Watch(context.Background(), &metainternalversion.ListOptions{ResourceVersion: "0123456789abcdef"}); !apierrors.IsResourceExpired(err) {
		t.Errorf("watch from an unknown version: %v, want ResourceExpired", err)
	}
	w2, err := r.Watch(context.Background(), &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.catalog", "beta")})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	for i := 0; i < 3; i++ {
		ev := <-w2.ResultChan()
		if ev.Type != watch.Added || len(ev.Object.(*metadatav1alpha1.CatalogMetadata).Spec.Content.Raw) == 0 {
			t.Fatalf("initial event %d = %s with content %q", i, ev.Type, ev.Object.(*metadatav1alpha1.CatalogMetadata).Spec.Content.Raw)
		}
	}
}

func TestTable(t *testing.T) {
	r, _, _ := newTestREST(t)
	l := list(t, r, "catalog=beta", "", 0, "")
	table, err := r.ConvertToTable(context.Background(), l, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, c.Name)
		}
	}
	if strings.Join(cols, ",") != "Catalog,Schema,Package,Name" {
		t.Errorf("columns %v", cols)
	}
	if len(table.Rows) != 3 || table.Rows[2].Cells[3] != "foo.v3.0.0" {
		t.Errorf("rows %v", table.Rows)
	}
}

// TestAnswersNameTheirContent: every object of a get or list names the content hash of the catalog
// content it was served from, and the next content's answers name the next hash.
func TestAnswersNameTheirContent(t *testing.T) {
	r, mem, h := newTestREST(t)
	want := map[string]string{"alpha": memHash(mem.catalogs["alpha"]), "beta": memHash(mem.catalogs["beta"])}
	l := list(t, r, "", "", 0, "")
	if len(l.Items) == 0 {
		t.Fatal("empty list")
	}
	for _, it := range l.Items {
		if got := it.Annotations[metadatav1alpha1.AnnotationContentHash]; got != want[it.Spec.Catalog] {
			t.Fatalf("%s: annotation %q, want %q", it.Name, got, want[it.Spec.Catalog])
		}
	}
	obj, err := r.Get(context.Background(), l.Items[0].Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*metadatav1alpha1.CatalogMetadata).Annotations[metadatav1alpha1.AnnotationContentHash]; got != want[l.Items[0].Spec.Catalog] {
		t.Fatalf("get: annotation %q", got)
	}

	mem.set("beta", demoBlobs("foo", "3.0.0", "3.1.0"))
	if err := h.Sync(); err != nil {
		t.Fatal(err)
	}
	next := memHash(mem.catalogs["beta"])
	for _, it := range list(t, r, "", "spec.catalog=beta", 0, "").Items {
		if got := it.Annotations[metadatav1alpha1.AnnotationContentHash]; got != next {
			t.Fatalf("after the update, %s: annotation %q, want %q", it.Name, got, next)
		}
	}
}
