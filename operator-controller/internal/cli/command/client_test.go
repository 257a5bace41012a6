package command

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

// TestSchemeListsCatalogMetadata: the client can pick one kind for a CatalogMetadataList (the
// metadata API package also registers an internal version, which would make a list ambiguous).
func TestSchemeListsCatalogMetadata(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []runtime.Object{&metadatav1alpha1.CatalogMetadataList{}, &catalogdv1alpha1.CatalogList{}, &operatorsv1alpha1.OperatorList{}} {
		if gvks, _, err := s.ObjectKinds(obj); err != nil || len(gvks) != 1 {
			t.Errorf("%T: kinds %v, %v", obj, gvks, err)
		}
	}
}
