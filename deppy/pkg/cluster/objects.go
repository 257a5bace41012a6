package cluster

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The resources read from a cluster.
var (
	CatalogGVR          = schema.GroupVersionResource{Group: "catalogd.operatorframework.io", Version: "v1alpha1", Resource: "catalogs"}
	CatalogMetadataGVR  = schema.GroupVersionResource{Group: "metadata.catalogd.operatorframework.io", Version: "v1alpha1", Resource: "catalogmetadata"}
	OperatorGVR         = schema.GroupVersionResource{Group: "operators.operatorframework.io", Version: "v1alpha1", Resource: "operators"}
	BundleDeploymentGVR = schema.GroupVersionResource{Group: "core.rukpak.io", Version: "v1alpha1", Resource: "bundledeployments"}
)

// Labels and annotations operator-controller puts on what it creates.
const (
	// LabelOwnerKind and LabelOwnerName mark BundleDeployments and Namespaces created for an Operator.
	LabelOwnerKind = "operators.operatorframework.io/owner-kind"
	LabelOwnerName = "operators.operatorframework.io/owner-name"

	// Annotations of a BundleDeployment: the bundle it installs.
	AnnotationPackage       = "operators.operatorframework.io/package"
	AnnotationBundleName    = "operators.operatorframework.io/bundle-name"
	AnnotationBundleVersion = "operators.operatorframework.io/bundle-version"
	AnnotationCatalog       = "operators.operatorframework.io/catalog"
)

// ConditionServing is the Catalog condition that is True while catalogd serves its content.
const ConditionServing = "Serving"

// FieldCatalog is the CatalogMetadata field selector naming the catalog a blob belongs to.
const FieldCatalog = "spec.catalog"

// Values of the Operator spec fields that change resolution.
const (
	UpgradeConstraintPolicyIgnore = "Ignore"
	UpgradePolicyManual           = "Manual"
	DependencyPolicyInstall       = "Install"
	UpgradeScopeAnyVersion        = "AnyVersion"
)

// Catalog is what resolution reads of a catalogd Catalog.
type Catalog struct {
	Name   string
	Labels map[string]string
	// Priority is spec.priority: it breaks ties between catalogs offering the same version.
	Priority int32
	// ContentHash is status.contentHash: the content being served.
	ContentHash string
	// Conditions are status.conditions.
	Conditions []metav1.Condition
	// Counts is status.counts (nil when catalogd did not report it).
	Counts *Counts
}

// Counts is what a Catalog's status says its content holds.
type Counts struct {
	Packages int32 `json:"packages"`
	Channels int32 `json:"channels"`
	Bundles  int32 `json:"bundles"`
}

// Serving reports whether the Catalog has content to resolve from: a content hash and Serving=True.
func (c *Catalog) Serving() bool {
	return c.ContentHash != "" && apimeta.IsStatusConditionTrue(c.Conditions, ConditionServing)
}

// Operator is what resolution reads of an Operator.
type Operator struct {
	Name              string
	CreationTimestamp metav1.Time
	// Deleting is true when the Operator has a deletion timestamp: it is not resolved any more.
	Deleting bool
	Spec     OperatorSpec
}

// OperatorSpec holds the spec fields of an Operator that resolution reads (JSON names as in the API).
type OperatorSpec struct {
	PackageName             string                `json:"packageName"`
	Version                 string                `json:"version,omitempty"`
	Channel                 string                `json:"channel,omitempty"`
	Channels                []string              `json:"channels,omitempty"`
	CatalogSelector         *metav1.LabelSelector `json:"catalogSelector,omitempty"`
	UpgradeConstraintPolicy string                `json:"upgradeConstraintPolicy,omitempty"`
	UpgradePolicy           string                `json:"upgradePolicy,omitempty"`
	ApprovedVersion         string                `json:"approvedVersion,omitempty"`
	DependencyPolicy        string                `json:"dependencyPolicy,omitempty"`
	UpgradeScope            string                `json:"upgradeScope,omitempty"`
	Paused                  bool                  `json:"paused,omitempty"`
	// Source is the Operator's spec.source; with type Bundle the Operator installs a bundle directly
	// and takes no part in resolution.
	Source *OperatorSource `json:"source,omitempty"`
}

// OperatorSource is what resolution reads of an Operator's spec.source: its type.
type OperatorSource struct {
	Type string `json:"type,omitempty"`
}

// SourceTypeBundle is the spec.source.type of an Operator that installs a bundle directly.
const SourceTypeBundle = "Bundle"

// Direct reports whether the Operator installs a bundle directly (spec.source.type Bundle): it is
// not resolved, and the bundle it installs is no catalog's.
func (s *OperatorSpec) Direct() bool {
	return s.Source != nil && s.Source.Type == SourceTypeBundle
}

// BundleDeployment is what resolution reads of an Operator's BundleDeployment: the annotations
// naming the bundle it installs.
type BundleDeployment struct {
	Name        string
	Annotations map[string]string
}

// OwnerOperator returns the name of the Operator a BundleDeployment was created for, or "" when it
// is not an Operator's: operator-controller's label names the Operator, and that Operator controls
// it.
func OwnerOperator(labels map[string]string, owners []metav1.OwnerReference) string {
	if labels[LabelOwnerKind] != "Operator" {
		return ""
	}
	for i := range owners {
		o := &owners[i]
		if o.Controller != nil && *o.Controller {
			if o.Kind == "Operator" && o.Name == labels[LabelOwnerName] {
				return o.Name
			}
			return ""
		}
	}
	return ""
}

// CatalogFromUnstructured decodes a Catalog read through the dynamic client.
func CatalogFromUnstructured(u *unstructured.Unstructured) (Catalog, error) {
	var obj struct {
		Spec struct {
			Priority int32 `json:"priority,omitempty"`
		} `json:"spec"`
		Status struct {
			ContentHash string             `json:"contentHash,omitempty"`
			Conditions  []metav1.Condition `json:"conditions,omitempty"`
			Counts      *Counts            `json:"counts,omitempty"`
		} `json:"status"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &obj); err != nil {
		return Catalog{}, fmt.Errorf("decoding Catalog %q: %w", u.GetName(), err)
	}
	return Catalog{
		Name: u.GetName(), Labels: u.GetLabels(), Priority: obj.Spec.Priority,
		ContentHash: obj.Status.ContentHash, Conditions: obj.Status.Conditions, Counts: obj.Status.Counts,
	}, nil
}

// OperatorFromUnstructured decodes an Operator read through the dynamic client.
func OperatorFromUnstructured(u *unstructured.Unstructured) (Operator, error) {
	var obj struct {
		Spec OperatorSpec `json:"spec"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &obj); err != nil {
		return Operator{}, fmt.Errorf("decoding Operator %q: %w", u.GetName(), err)
	}
	return Operator{
		Name: u.GetName(), CreationTimestamp: u.GetCreationTimestamp(),
		Deleting: u.GetDeletionTimestamp() != nil, Spec: obj.Spec,
	}, nil
}

// BundleDeploymentsByOperator keeps the BundleDeployments created for an Operator (see
// OwnerOperator), by the Operator's name.
func BundleDeploymentsByOperator(items []unstructured.Unstructured) map[string]BundleDeployment {
	out := map[string]BundleDeployment{}
	for i := range items {
		u := &items[i]
		if op := OwnerOperator(u.GetLabels(), u.GetOwnerReferences()); op != "" {
			out[op] = BundleDeployment{Name: u.GetName(), Annotations: u.GetAnnotations()}
		}
	}
	return out
}
