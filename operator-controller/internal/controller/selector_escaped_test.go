package controller

import (
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

// TestCatalogSelectorValuesAcceptedByTheAPIAreReportedEscaped: a catalogSelector the CRD accepts
// but that is not a label selector fails resolution for its Operator alone, with a message that
// names the field and shows the value escaped (no character of it is invisible in the condition).
func TestCatalogSelectorValuesAcceptedByTheAPIAreReportedEscaped(t *testing.T) {
	cats := []catalogdv1alpha1.Catalog{{ObjectMeta: metav1.ObjectMeta{Name: "main", Labels: map[string]string{"tier": "prod"}}}}
	for _, tc := range []struct {
		name string
		sel  *metav1.LabelSelector
		want string
	}{
		{name: "label value with a zero-width space", sel: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "pr\u200bod"}},
			want: `spec.catalogSelector is invalid: values[0][tier]: Invalid value: "pr\u200bod"`},
		{name: "label name part over 63 characters", sel: &metav1.LabelSelector{MatchLabels: map[string]string{"example.com/" + strings.Repeat("a", 64): "x"}},
			want: `spec.catalogSelector is invalid: key: Invalid value: "example.com/` + strings.Repeat("a", 64) + `": name part must be no more than 63 bytes`},
		{name: "matchExpressions key with NUL", sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "ti\x00er", Operator: metav1.LabelSelectorOpExists}}},
			want: `spec.catalogSelector is invalid: key: Invalid value: "ti\x00er"`},
		{name: "matchExpressions value with a right-to-left override", sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"\u202eprod"}}}},
			want: `spec.catalogSelector is invalid: values[0][tier]: Invalid value: "\u202eprod"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops := []operatorsv1alpha1.Operator{
				{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: operatorsv1alpha1.OperatorSpec{PackageName: "a", CatalogSelector: tc.sel}},
				{ObjectMeta: metav1.ObjectMeta{Name: "good"}, Spec: operatorsv1alpha1.OperatorSpec{PackageName: "b"}},
			}
			reqs, invalid := requests(ops, nil, cats)
			msg := invalid["bad"]
			t.Log(msg)
			if !strings.Contains(msg, tc.want) {
				t.Errorf("message\n%s\ndoes not contain\n%s", msg, tc.want)
			}
			for _, r := range msg {
				if !strconv.IsPrint(r) {
					t.Errorf("message holds %U, which does not show: %q", r, msg)
				}
			}
			if len(reqs) != 1 || reqs[0].Name != "good" {
				t.Errorf("the other Operator is not resolved: requests %+v", reqs)
			}
		})
	}
}
