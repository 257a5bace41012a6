package metadataapi

import (
	"context"
	"strings"
	"testing"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/fbc"
)

// While a catalog's content is swapped back and forth, every paginated list either returns exactly
// the content its resourceVersion names, on every page, or ends in 410 Gone; it never mixes two
// contents or fails otherwise (pages read the content they started with, even once it is replaced).
func TestListsDuringContentChangesAreConsistentOrGone(t *testing.T) {
	contents := []*fbc.Catalog{fbcCatalog(t, "foo", "1.0.0", "1.1.0"), fbcCatalog(t, "foo", "2.0.0", "2.1.0", "2.2.0")}
	want := map[string]string{} // list resourceVersion → its objects and their versions
	ref := startReplica(t, t.TempDir())
	for _, c := range contents {
		ref.put(t, "alpha", c)
		l := ref.list(t, metainternalversion.ListOptions{})
		want[l.ResourceVersion] = describeList(l.Items)
	}

	a := startReplica(t, t.TempDir())
	a.put(t, "alpha", contents[0])
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	swapErr := make(chan error, 1)
	go func() {
		defer close(swapErr)
		for i := 1; ctx.Err() == nil; i++ {
			if _, err := a.store.Put("alpha", contents[i%2]); err != nil {
				swapErr <- err
				return
			}
			if err := a.hub.Notify("alpha"); err != nil {
				swapErr <- err
				return
			}
		}
	}()
	complete, gone := 0, 0
	for ctx.Err() == nil {
		var items []metadatav1alpha1.CatalogMetadata
		rv, cont := "", ""
		for {
			obj, err := a.rest.List(context.Background(), &metainternalversion.ListOptions{Limit: 2, Continue: cont})
			if err != nil {
				assertGone(t, err)
				gone++
				break
			}
			l := obj.(*metadatav1alpha1.CatalogMetadataList)
			if rv == "" {
				rv = l.ResourceVersion
			} else if l.ResourceVersion != rv {
				t.Fatalf("a page at %q in a list at %q", l.ResourceVersion, rv)
			}
			items = append(items, l.Items...)
			if cont = l.Continue; cont == "" {
				if got := describeList(items); got != want[rv] {
					t.Fatalf("list at %q:\n got  %s\n want %s", rv, got, want[rv])
				}
				complete++
				break
			}
		}
	}
	if err := <-swapErr; err != nil {
		t.Fatal(err)
	}
	if complete == 0 {
		t.Errorf("no list completed (%d ended in 410)", gone)
	}
	t.Logf("%d complete lists, %d ended in 410 Gone", complete, gone)
}

func describeList(items []metadatav1alpha1.CatalogMetadata) string {
	var b strings.Builder
	for _, i := range items {
		b.WriteString(i.Name + "@" + i.ResourceVersion + ":" + string(i.Spec.Content.Raw) + "\n")
	}
	return b.String()
}
