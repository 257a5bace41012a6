package controller

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func TestSetConditions(t *testing.T) {
	served := &storage.Content{Hash: "sha256:aaa"}
	resolved := &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeImage,
		Image: &rukpakv1alpha1.ResolvedImageSource{Ref: "reg/cat@sha256:1"}}
	cases := map[string]struct {
		status        catalogdv1alpha1.CatalogStatus
		out           unpackOutcome
		served        *storage.Content
		unpacked      metav1.ConditionStatus
		servingReason string
		servingMsg    string
	}{
		"first success": {
			status:   catalogdv1alpha1.CatalogStatus{ContentHash: "sha256:aaa", ServedGeneration: 3, ResolvedSource: resolved},
			out:      unpackOutcome{reason: catalogdv1alpha1.ReasonUnpackSucceeded},
			served:   served,
			unpacked: metav1.ConditionTrue, servingReason: catalogdv1alpha1.ReasonServing, servingMsg: "serving generation 3 (image reg/cat@sha256:1, sha256:aaa)",
		},
		"failed update keeps serving": {
			status:   catalogdv1alpha1.CatalogStatus{ContentHash: "sha256:aaa", ServedGeneration: 2, ResolvedSource: resolved},
			out:      unpackOutcome{reason: catalogdv1alpha1.ReasonInvalidCatalog, message: "bad"},
			served:   served,
			unpacked: metav1.ConditionFalse, servingReason: catalogdv1alpha1.ReasonServingPreviousContent, servingMsg: "stale: serving the last good content, from generation 2",
		},
		"nothing served yet": {
			out:      unpackOutcome{reason: catalogdv1alpha1.ReasonUnpackFailed, message: "not found"},
			unpacked: metav1.ConditionFalse, servingReason: catalogdv1alpha1.ReasonNotServing, servingMsg: "no content is served yet",
		},
		"store lost the content the status names": {
			status:   catalogdv1alpha1.CatalogStatus{ContentHash: "sha256:bbb", ServedGeneration: 3},
			out:      unpackOutcome{reason: catalogdv1alpha1.ReasonPending},
			served:   served,
			unpacked: metav1.ConditionFalse, servingReason: catalogdv1alpha1.ReasonNotServing,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cat := &catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Status: tc.status}
			setConditions(cat, tc.out, tc.served)
			u := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypeUnpacked)
			s := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypeServing)
			if u.Status != tc.unpacked || u.Reason != tc.out.reason || u.ObservedGeneration != 3 {
				t.Errorf("Unpacked = %+v", u)
			}
			if s.Reason != tc.servingReason || !strings.Contains(s.Message, tc.servingMsg) || s.ObservedGeneration != 3 {
				t.Errorf("Serving = %+v", s)
			}
			if (s.Status == metav1.ConditionTrue) != (tc.servingReason != catalogdv1alpha1.ReasonNotServing) {
				t.Errorf("Serving status %s with reason %s", s.Status, s.Reason)
			}
			if cat.Status.ObservedGeneration != 3 {
				t.Errorf("observedGeneration = %d", cat.Status.ObservedGeneration)
			}
		})
	}
}

func TestUsesConfigMap(t *testing.T) {
	src := rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeConfigMaps, ConfigMaps: []rukpakv1alpha1.ConfigMapSource{
		{ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: "a"}}, {ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: "b"}, Path: "x"}}}
	if !usesConfigMap(src, "b") || usesConfigMap(src, "c") {
		t.Error("usesConfigMap")
	}
	if usesConfigMap(rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "a"}}, "a") {
		t.Error("an Image source uses no ConfigMap")
	}
}

func TestShortHash(t *testing.T) {
	for in, want := range map[string]string{
		"sha256:0123456789abcdef0123": "0123456789ab",
		"sha256:abc":                  "abc",
		"":                            "",
	} {
		if got := shortHash(in); got != want {
			t.Errorf("shortHash(%q) = %q, want %q", in, got, want)
		}
	}
	cat := &catalogdv1alpha1.Catalog{Status: catalogdv1alpha1.CatalogStatus{ContentHash: "sha256:fedcba9876543210"}}
	setConditions(cat, unpackOutcome{reason: catalogdv1alpha1.ReasonUnpackSucceeded}, &storage.Content{Hash: "sha256:fedcba9876543210"})
	if cat.Status.ShortHash != "fedcba987654" {
		t.Errorf("status.shortHash = %q after setConditions", cat.Status.ShortHash)
	}
}
