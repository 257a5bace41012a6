package metadataapi

import (
	"context"
	"fmt"
	"testing"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
)

// benchReader serves catalogs catalogs of packages packages with bundles bundles each.
func benchReader(catalogs, packages, bundles int) *memReader {
	r := &memReader{catalogs: map[string][]Blob{}}
	for c := range catalogs {
		var blobs []Blob
		for p := range packages {
			versions := make([]string, bundles)
			for v := range versions {
				versions[v] = fmt.Sprintf("1.%d.0", v)
			}
			blobs = append(blobs, demoBlobs(fmt.Sprintf("pkg%d", p), versions...)...)
		}
		r.catalogs[fmt.Sprintf("cat%d", c)] = blobs
	}
	return r
}

// BenchmarkList lists 4 catalogs of 2,200 objects each in pages of 500.
func BenchmarkList(b *testing.B) {
	h, err := NewHub(benchReader(4, 100, 20))
	if err != nil {
		b.Fatal(err)
	}
	rest := NewREST(h)
	b.ReportAllocs()
	for b.Loop() {
		opts := &metainternalversion.ListOptions{Limit: 500}
		for {
			obj, err := rest.List(context.Background(), opts)
			if err != nil {
				b.Fatal(err)
			}
			cont := obj.(interface{ GetContinue() string }).GetContinue()
			if cont == "" {
				break
			}
			opts = &metainternalversion.ListOptions{Limit: 500, Continue: cont}
		}
	}
}

// BenchmarkNotify swaps a catalog of 2,200 objects between two contents that differ in one package.
func BenchmarkNotify(b *testing.B) {
	r := benchReader(1, 100, 20)
	h, err := NewHub(r)
	if err != nil {
		b.Fatal(err)
	}
	a := r.catalogs["cat0"]
	alt := append(append([]Blob(nil), a[:len(a)-22]...), demoBlobs("pkg99", "9.0.0")...)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i++; i%2 == 1 {
			r.set("cat0", alt)
		} else {
			r.set("cat0", a)
		}
		if err := h.Notify("cat0"); err != nil {
			b.Fatal(err)
		}
	}
}
