// Package v1alpha1 contains the operators.operatorframework.io/v1alpha1 API: the Operator kind,
// which asks operator-controller to resolve a package from the Catalogs and install it.
//
// +kubebuilder:object:generate=true
// +groupName=operators.operatorframework.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "operators.operatorframework.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
