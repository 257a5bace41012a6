package controller

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

func TestReleasesOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"sh.helm.release.v1.web.v3", map[string]string{"owner": "helm", "name": "web"}, []string{"web"}},
		{"sh.helm.release.v1.web.v3", map[string]string{"owner": apply.SetAsideOwner, "name": "web"}, []string{"web"}},
		{"sh.helm.release.v1.web.v3", nil, []string{"web"}},                                     // labels removed
		{"sh.helm.release.v1.my.v2.app.v12", nil, []string{"my.v2.app"}},                        // ".v" inside the name
		{"sh.helm.release.v1.web.v3", map[string]string{"name": "api"}, []string{"api", "web"}}, // label changed
		{"webhook-ca", map[string]string{"name": "x"}, []string{"x"}},
		{"webhook-ca", nil, nil},
		{"sh.helm.release.v1..v3", nil, nil},
	} {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Labels: tc.labels}}
		if got := releasesOf(o); !slices.Equal(got, tc.want) {
			t.Errorf("releasesOf(%s %v) = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}

func TestBlockedByRecords(t *testing.T) {
	installed := func(reason string) []metav1.Condition {
		return []metav1.Condition{{Type: rukpakv1alpha1.TypeInstalled, Status: metav1.ConditionFalse, Reason: reason}}
	}
	now := metav1.NewTime(time.Now())
	for _, tc := range []struct {
		what string
		bd   rukpakv1alpha1.BundleDeployment
		want bool
	}{
		{"ReleaseCorrupt", rukpakv1alpha1.BundleDeployment{Status: rukpakv1alpha1.BundleDeploymentStatus{Conditions: installed(apply.ReasonReleaseCorrupt)}}, true},
		{"another failure", rukpakv1alpha1.BundleDeployment{Status: rukpakv1alpha1.BundleDeploymentStatus{Conditions: installed(rukpakv1alpha1.ReasonInstallFailed)}}, false},
		{"no condition yet", rukpakv1alpha1.BundleDeployment{}, false},
		{"deleting, finalizer", rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now, Finalizers: []string{Finalizer}}}, true},
		{"deleting, finalizer gone", rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now, Finalizers: []string{"other"}}}, false},
	} {
		if got := blockedByRecords(&tc.bd); got != tc.want {
			t.Errorf("%s: blockedByRecords = %v, want %v", tc.what, got, tc.want)
		}
	}
}
