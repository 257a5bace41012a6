package metadataapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
)

// fuzzCatalogs is the content the fuzz targets list: names that are valid label values and names
// that are not (upper case, long, unusual characters), so that both the label and the field paths
// of the selectors are reached.
func fuzzCatalogs() map[string][]Blob {
	long := strings.Repeat("x", 70)
	blob := func(schema, pkg, name string) Blob {
		return Blob{Schema: schema, Package: pkg, Name: name, Content: []byte(fmt.Sprintf(`{"schema":%q,"package":%q,"name":%q}`, schema, pkg, name))}
	}
	return map[string][]Blob{
		"alpha": {
			blob("olm.package", "foo", "foo"), blob("olm.channel", "foo", "stable"),
			blob("olm.bundle", "foo", "foo.v1.0.0"), blob("olm.bundle", "foo", "foo.v1.1.0"),
			blob("olm.package", "bar", "bar"), blob("olm.bundle", "bar", "bar.v2.0.0"),
			blob("example.custom", "", "Weird Name/ü"), blob("olm.bundle", "bar", long),
		},
		"beta":          {blob("olm.package", "foo", "foo"), blob("olm.bundle", "foo", "foo.v3.0.0")},
		"gamma.example": {blob("olm.deprecations", "foo", ""), blob("olm.bundle", "Foo", "Foo.v1")},
		"zz-empty-ish":  {},
		"delta-" + long: {blob("olm.package", "foo", "foo")},
	}
}

// fuzzREST serves fuzzCatalogs. Lists and watches do not change it, so one serves every input.
func fuzzREST(f *testing.F) *REST {
	f.Helper()
	h, err := NewHub(&memReader{catalogs: fuzzCatalogs()})
	if err != nil {
		f.Fatal(err)
	}
	return NewREST(h)
}

func fuzzList(t *testing.T, r *REST, opts *metainternalversion.ListOptions) (*metadatav1alpha1.CatalogMetadataList, error) {
	t.Helper()
	obj, err := r.List(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	return obj.(*metadatav1alpha1.CatalogMetadataList), nil
}

func fuzzNames(l *metadatav1alpha1.CatalogMetadataList) []string {
	var out []string
	for _, i := range l.Items {
		out = append(out, i.Name)
	}
	return out
}

// FuzzContinueToken: decoding any continue token (and any resourceVersion) answers a position, 400
// Bad Request or 410 Gone, never a panic or another error; a token the encoder writes decodes to
// the same position; a list continued with any token answers a page, 400 or 410.
func FuzzContinueToken(f *testing.F) {
	tok := func(t continueToken) string { return t.encode() }
	const v = "0123456789abcdef" // a well-formed resourceVersion
	for _, s := range []string{
		"", "x", "=", "e30", "bnVsbA", // "", "x", "=", "{}", "null"
		tok(continueToken{Version: continueVersion, RV: v, Catalog: "alpha", Offset: 1, Rest: v, Selector: v}),
		tok(continueToken{Version: continueVersion, RV: v, Catalog: "alpha", Offset: -1, Rest: v, Selector: v}),
		tok(continueToken{Version: 2, RV: v, Catalog: "beta", Rest: v, Selector: v}),
		tok(continueToken{Version: continueVersion, RV: "ABCDEF0123456789", Catalog: "beta", Rest: v, Selector: v}),
		base64.RawURLEncoding.EncodeToString([]byte(`{"c":"alpha","o":3,"v":17}`)), // a token of an older catalogd
		base64.RawURLEncoding.EncodeToString([]byte(`{"v":1,"o":1e99}`)),
		base64.StdEncoding.EncodeToString([]byte(`{"v":1,"c":"alpha"}`)),
	} {
		f.Add(s, "", "alpha", 0, uint8(1))
	}
	f.Add("", "0", "gamma.example", 5, uint8(2))
	f.Add("", "12345", "beta", 1<<40, uint8(0))
	f.Add("", v, "", -3, uint8(3))
	f.Add("", "DEADBEEFdeadbeef", "\xff", 0, uint8(1))

	r := fuzzREST(f)
	f.Fuzz(func(t *testing.T, token, rv, catalog string, offset int, limit uint8) {
		// Decoding.
		ct, err := decodeContinue(token)
		switch {
		case err == nil && ct == nil:
			t.Fatal("decodeContinue returned neither a token nor an error")
		case err != nil && ct != nil:
			t.Fatalf("decodeContinue returned a token and the error %v", err)
		case err != nil && !apierrors.IsBadRequest(err) && !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err):
			t.Fatalf("decodeContinue(%q) = %v, want 400 Bad Request or 410 Gone", token, err)
		case err == nil && (ct.Catalog == "" || ct.Offset < 0 || ct.Version != continueVersion ||
			!isVersion(ct.RV) || !isVersion(ct.Rest) || !isVersion(ct.Selector)):
			t.Fatalf("decodeContinue(%q) accepted a token that names no valid position: %+v", token, ct)
		}

		// Round trip of what the encoder writes (catalog names are Kubernetes names: valid UTF-8).
		if catalog != "" && utf8.ValidString(catalog) && offset >= 0 {
			want := continueToken{Version: continueVersion, RV: v, Catalog: catalog, Offset: offset, Rest: "fedcba9876543210", Selector: v}
			got, err := decodeContinue(want.encode())
			if err != nil {
				t.Fatalf("the encoder's token %+v does not decode: %v", want, err)
			}
			if *got != want {
				t.Fatalf("token %+v decodes to %+v", want, *got)
			}
		}

		// resourceVersions.
		if _, err := parseVersion(rv); err != nil && !apierrors.IsBadRequest(err) {
			t.Fatalf("parseVersion(%q) = %v, want 400 Bad Request", rv, err)
		}

		// A list continued with the token (and at the resourceVersion).
		for _, opts := range []*metainternalversion.ListOptions{
			{Continue: token, Limit: int64(limit)},
			{Continue: token, Limit: int64(limit), ResourceVersion: rv},
			{ResourceVersion: rv, Limit: int64(limit)},
		} {
			if _, err := fuzzList(t, r, opts); err != nil && !apierrors.IsBadRequest(err) && !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
				t.Fatalf("List(continue=%q, resourceVersion=%q) = %v, want a page, 400 or 410", opts.Continue, opts.ResourceVersion, err)
			}
		}
		if w, err := r.Watch(context.Background(), &metainternalversion.ListOptions{ResourceVersion: rv}); err == nil {
			w.Stop()
		} else if !apierrors.IsBadRequest(err) && !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Fatalf("Watch(resourceVersion=%q) = %v, want a watch, 400 or 410", rv, err)
		}
	})
}

// FuzzListSelectors: any label and field selector the API server parses gives, from List, exactly
// the objects that match it (the exact values that narrow the store query drop nothing), and paging
// through it with any limit gives the same objects in the same order.
func FuzzListSelectors(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""},
		{"catalog=alpha", ""},
		{"schema=olm.bundle,package=foo", ""},
		{"package in (foo,bar),schema!=olm.channel", ""},
		{"!name", "spec.catalog=alpha"},
		{"name notin (foo)", "spec.package=foo,spec.schema=olm.bundle"},
		{"catalog=beta", "spec.catalog=alpha"},
		{"", "spec.name=Weird Name/ü"},
		{"", `spec.name=Weird Name\/ü`},
		{"", "metadata.name!=x,spec.package!=foo"},
		{"package=Foo", "spec.package==Foo"},
		{"catalog", "spec.schema=olm.package"},
		{"x=y", "x=y"},
		{"package=foo,package=bar", "spec.package=foo,spec.package=bar"},
	} {
		f.Add(s[0], s[1], uint8(2))
	}
	r := fuzzREST(f)
	f.Fuzz(func(t *testing.T, label, field string, limit uint8) {
		ls, err := labels.Parse(label)
		if err != nil {
			return // 400 from the API server before the storage is asked
		}
		fs, err := fields.ParseSelector(field)
		if err != nil {
			return
		}
		all, err := fuzzList(t, r, nil)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		sel := newSelection(ls, fs)
		var want []string
		for i := range all.Items {
			if sel.matches(&all.Items[i]) {
				want = append(want, all.Items[i].Name)
			}
		}
		got, err := fuzzList(t, r, &metainternalversion.ListOptions{LabelSelector: ls, FieldSelector: fs})
		if err != nil {
			t.Fatalf("List(%q, %q): %v", ls, fs, err)
		}
		if !slices.Equal(fuzzNames(got), want) {
			t.Fatalf("List(%q, %q) = %q, want the matching objects %q", ls, fs, fuzzNames(got), want)
		}

		// Paging.
		pageSize := int64(limit%5) + 1
		var paged []string
		cont := ""
		for page := 0; ; page++ {
			if page > len(want)+1 {
				t.Fatalf("paging by %d does not end after %d pages", pageSize, page)
			}
			l, err := fuzzList(t, r, &metainternalversion.ListOptions{LabelSelector: ls, FieldSelector: fs, Limit: pageSize, Continue: cont})
			if err != nil {
				t.Fatalf("page %d of List(%q, %q) by %d: %v", page, ls, fs, pageSize, err)
			}
			if int64(len(l.Items)) > pageSize {
				t.Fatalf("page %d has %d items, limit %d", page, len(l.Items), pageSize)
			}
			paged = append(paged, fuzzNames(l)...)
			if l.Continue == "" {
				break
			}
			cont = l.Continue
		}
		if !slices.Equal(paged, want) {
			t.Fatalf("paging List(%q, %q) by %d gives %q, want %q", ls, fs, pageSize, paged, want)
		}

		if w, err := r.Watch(context.Background(), &metainternalversion.ListOptions{LabelSelector: ls, FieldSelector: fs}); err == nil {
			w.Stop()
		} else {
			t.Fatalf("Watch(%q, %q): %v", ls, fs, err)
		}
	})
}
