package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func TestLastResolutionAnswers(t *testing.T) {
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "u1", Generation: 2}}
	bd := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{AnnotationBundleName: "a.v1"}}}
	last := &lastResolution{epoch: 7, cluster: "v1.37", seen: map[string]inputSeen{"a": seenOf(op, bd)}}

	now := metav1.Now()
	for _, tc := range []struct {
		name    string
		epoch   uint64
		cluster string
		op      func(*operatorsv1alpha1.Operator)
		bd      func(*rukpakv1alpha1.BundleDeployment) *rukpakv1alpha1.BundleDeployment
		want    bool
	}{
		{name: "the same inputs", epoch: 7, cluster: "v1.37", want: true},
		{name: "its status changed only", epoch: 7, cluster: "v1.37", bd: func(b *rukpakv1alpha1.BundleDeployment) *rukpakv1alpha1.BundleDeployment {
			b.Status.Conditions = []metav1.Condition{{Type: "Installed", Status: metav1.ConditionTrue}}
			return b
		}, want: true},
		{name: "a change was counted since", epoch: 8, cluster: "v1.37"},
		{name: "another cluster version", epoch: 7, cluster: "v1.38"},
		{name: "a new generation not counted yet", epoch: 7, cluster: "v1.37", op: func(o *operatorsv1alpha1.Operator) { o.Generation = 3 }},
		{name: "being deleted", epoch: 7, cluster: "v1.37", op: func(o *operatorsv1alpha1.Operator) { o.DeletionTimestamp = &now }},
		{name: "recreated under the same name", epoch: 7, cluster: "v1.37", op: func(o *operatorsv1alpha1.Operator) { o.UID = types.UID("u2") }},
		{name: "another Operator", epoch: 7, cluster: "v1.37", op: func(o *operatorsv1alpha1.Operator) { o.Name = "b" }},
		{name: "another bundle installed", epoch: 7, cluster: "v1.37", bd: func(b *rukpakv1alpha1.BundleDeployment) *rukpakv1alpha1.BundleDeployment {
			b.Annotations = map[string]string{AnnotationBundleName: "a.v2"}
			return b
		}},
		{name: "its BundleDeployment gone", epoch: 7, cluster: "v1.37", bd: func(*rukpakv1alpha1.BundleDeployment) *rukpakv1alpha1.BundleDeployment { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, b := op.DeepCopy(), bd.DeepCopy()
			if tc.op != nil {
				tc.op(o)
			}
			if tc.bd != nil {
				b = tc.bd(b)
			}
			if got := last.answers(tc.epoch, tc.cluster, o, b); got != tc.want {
				t.Errorf("answers = %v, want %v", got, tc.want)
			}
		})
	}
	var none *lastResolution
	if none.answers(0, "", op, bd) {
		t.Error("no resolution yet answers")
	}
}

func TestInputChanges(t *testing.T) {
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "u1", Generation: 1}}
	status := op.DeepCopy()
	status.Status.Conditions = []metav1.Condition{{Type: "Installed"}}
	status.Finalizers = []string{"x"}
	if operatorInputChanged(op, status) {
		t.Error("a status or finalizer change of an Operator counted")
	}
	spec := op.DeepCopy()
	spec.Generation = 2
	deleting := op.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	for _, changed := range []*operatorsv1alpha1.Operator{spec, deleting} {
		if !operatorInputChanged(op, changed) {
			t.Errorf("not counted: %+v", changed.ObjectMeta)
		}
	}

	bd := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{LabelOwnerName: "a"},
		Annotations: map[string]string{AnnotationBundleName: "a.v1"}, OwnerReferences: []metav1.OwnerReference{{Kind: "Operator", Name: "a", UID: "u1"}}}}
	bdStatus := bd.DeepCopy()
	bdStatus.Status.Conditions = []metav1.Condition{{Type: "Healthy"}}
	bdStatus.Generation = 4 // rukpak's status, or a spec change of settings: resolution reads neither
	if bundleDeploymentInputChanged(bd, bdStatus) {
		t.Error("a status change of a BundleDeployment counted")
	}
	ann, lbl, own := bd.DeepCopy(), bd.DeepCopy(), bd.DeepCopy()
	ann.Annotations[AnnotationBundleName] = "a.v2"
	lbl.Labels[LabelOwnerName] = "b"
	own.OwnerReferences[0].UID = "u2"
	for _, changed := range []*rukpakv1alpha1.BundleDeployment{ann, lbl, own} {
		if !bundleDeploymentInputChanged(bd, changed) {
			t.Errorf("not counted: %+v", changed.ObjectMeta)
		}
	}
}
