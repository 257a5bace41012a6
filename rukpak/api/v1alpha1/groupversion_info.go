// Package v1alpha1 contains the core.rukpak.io/v1alpha1 API: the BundleDeployment kind, and the
// Source union (where bundle or catalog content is fetched from) that catalogd's Catalog also uses.
//
// +kubebuilder:object:generate=true
// +groupName=core.rukpak.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "core.rukpak.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
