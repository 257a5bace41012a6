package replica

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
)

func catalog(name, hash string, serving metav1.ConditionStatus) catalogdv1alpha1.Catalog {
	c := catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.Status.ContentHash = hash
	c.Status.Conditions = []metav1.Condition{{Type: catalogdv1alpha1.TypeServing, Status: serving}}
	return c
}

func TestLagging(t *testing.T) {
	deleting := catalog("deleting", "sha256:d", metav1.ConditionTrue)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	cats := []catalogdv1alpha1.Catalog{
		catalog("z-behind", "sha256:new", metav1.ConditionTrue),
		catalog("in-sync", "sha256:same", metav1.ConditionTrue),
		catalog("a-missing", "sha256:a", metav1.ConditionTrue),
		catalog("not-serving", "sha256:n", metav1.ConditionFalse),
		catalog("never-unpacked", "", metav1.ConditionFalse),
		deleting,
	}
	store := map[string]*storage.Content{
		"z-behind": {Hash: "sha256:old"},
		"in-sync":  {Hash: "sha256:same"},
	}
	served := func(n string) (*storage.Content, bool) { c, ok := store[n]; return c, ok }
	failure := func(n string) string {
		if n == "a-missing" {
			return "image reg/a@sha256:a: not found"
		}
		return ""
	}

	got := lagging(cats, served, false, failure)
	want := []lag{
		{catalog: "a-missing", want: "sha256:a", failure: "image reg/a@sha256:a: not found"},
		{catalog: "z-behind", want: "sha256:new", have: "sha256:old"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("not the leader:\n got  %v\n want %v", got, want)
	}
	msg := notServing(got).Error()
	for _, s := range []string{"still loading 2 catalog(s)", `"a-missing" (status names sha256:a, serving nothing; last attempt: image reg/a@sha256:a: not found)`,
		`"z-behind" (status names sha256:new, serving sha256:old)`} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q lacks %q", msg, s)
		}
	}

	// The leader writes status from its own store: it is behind only where it has nothing.
	if got := lagging(cats, served, true, failure); len(got) != 1 || got[0].catalog != "a-missing" {
		t.Errorf("leader: %v, want only a-missing", got)
	}
	if err := notServing(nil); err != nil {
		t.Errorf("no lag: %v", err)
	}
}

func TestNotServingListsAtMostTenCatalogs(t *testing.T) {
	var lags []lag
	for i := range 12 {
		lags = append(lags, lag{catalog: fmt.Sprintf("c%02d", i), want: "sha256:x"})
	}
	msg := notServing(lags).Error()
	if !strings.Contains(msg, `"c09"`) || strings.Contains(msg, `"c10"`) || !strings.HasSuffix(msg, "; and 2 more") {
		t.Errorf("message: %s", msg)
	}
}
