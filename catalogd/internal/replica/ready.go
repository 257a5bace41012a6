package replica

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
)

// ReadyCheck is the "catalogs" readyz check (a healthz.Checker): it fails until this replica serves,
// for every Catalog with Serving=True, the content its status names, and says which catalogs it is
// still loading and why. On the leader it only asks that the store holds content for each of them:
// the leader writes status from its own store, and is behind only after a restart on an empty store.
func (s *Syncer) ReadyCheck(req *http.Request) error {
	inf, err := s.Cache.GetInformer(req.Context(), &catalogdv1alpha1.Catalog{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("reading Catalogs: %w", err)
	}
	if !inf.HasSynced() {
		return errors.New("the Catalog cache has not synced yet")
	}
	var list catalogdv1alpha1.CatalogList
	if err := s.Client.List(req.Context(), &list); err != nil {
		return fmt.Errorf("listing Catalogs from the cache: %w", err)
	}
	leader, failure := s.leading(), s.failure
	if leader {
		// Failures noted before the election are stale: the reconciler loads now.
		failure = func(string) string { return "" }
	}
	return notServing(lagging(list.Items, s.Loader.Store.Get, leader, failure))
}

// lag is a Catalog whose status names content this replica does not serve.
type lag struct {
	catalog, want, have, failure string
}

// lagging returns the Catalogs with Serving=True (and not being deleted) that the store does not
// serve as their status says — on the leader, those it has no content for — sorted by name.
func lagging(cats []catalogdv1alpha1.Catalog, served func(string) (*storage.Content, bool), leader bool, failure func(string) string) []lag {
	var out []lag
	for i := range cats {
		c := &cats[i]
		if !c.DeletionTimestamp.IsZero() || c.Status.ContentHash == "" ||
			!meta.IsStatusConditionTrue(c.Status.Conditions, catalogdv1alpha1.TypeServing) {
			continue
		}
		cur, ok := served(c.Name)
		switch {
		case ok && (leader || cur.Hash == c.Status.ContentHash):
			continue
		case ok:
			out = append(out, lag{catalog: c.Name, want: c.Status.ContentHash, have: cur.Hash, failure: failure(c.Name)})
		default:
			out = append(out, lag{catalog: c.Name, want: c.Status.ContentHash, failure: failure(c.Name)})
		}
	}
	slices.SortFunc(out, func(a, b lag) int { return strings.Compare(a.catalog, b.catalog) })
	return out
}

// maxListed bounds how many catalogs the readiness message details.
const maxListed = 10

// notServing is nil for no lag, else an error naming the catalogs still loading.
func notServing(lags []lag) error {
	if len(lags) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "still loading %d catalog(s) to serve the content their status names:", len(lags))
	for i, l := range lags {
		if i == maxListed {
			fmt.Fprintf(&b, "; and %d more", len(lags)-maxListed)
			break
		}
		sep := ";"
		if i == 0 {
			sep = ""
		}
		have := "nothing"
		if l.have != "" {
			have = l.have
		}
		fmt.Fprintf(&b, "%s %q (status names %s, serving %s", sep, l.catalog, l.want, have)
		if l.failure != "" {
			fmt.Fprintf(&b, "; last attempt: %s", l.failure)
		}
		b.WriteString(")")
	}
	return errors.New(b.String())
}
