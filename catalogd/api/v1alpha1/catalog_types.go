package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Condition types of a Catalog.
// LabelMetadataName is the label catalogd sets on every Catalog to the Catalog's own name, so that
// an Operator's catalogSelector can pick one catalog by name:
// matchLabels: {olm.operatorframework.io/metadata.name: <catalog>}. catalogd resets it when it is
// changed or removed.
const LabelMetadataName = "olm.operatorframework.io/metadata.name"

const (
	// TypeUnpacked is True when the content of the current spec was fetched and parsed as a valid
	// file-based catalog. It is False with reason Pending, UnpackFailed or InvalidCatalog otherwise.
	TypeUnpacked = "Unpacked"
	// TypeServing is True when catalogd serves content for this Catalog (through CatalogMetadata and
	// status.contentURL). It stays True on the last good content when a newer spec fails to unpack;
	// the reason and message then say which generation is served.
	TypeServing = "Serving"
	// TypePaused is True while spec.paused is true: nothing is unpacked or polled, the content
	// the status names stays served, and Unpacked and Serving keep what they said when the pause
	// began. Its lastTransitionTime (and message) say since when. It is False otherwise.
	TypePaused = "Paused"
)

// Condition reasons of a Catalog.
const (
	// ReasonPending (Unpacked=False): the current spec has not been unpacked yet.
	ReasonPending = "Pending"
	// ReasonUnpackSucceeded (Unpacked=True): the current spec was unpacked and parsed.
	ReasonUnpackSucceeded = "Succeeded"
	// ReasonUnpackFailed (Unpacked=False): the content could not be fetched (registry, network,
	// missing ConfigMap, credentials, ...); the message says what to check.
	ReasonUnpackFailed = "UnpackFailed"
	// ReasonInvalidCatalog (Unpacked=False): the content was fetched but is not a valid file-based
	// catalog; the message names the file and the problem.
	ReasonInvalidCatalog = "InvalidCatalog"
	// ReasonUnsigned (Unpacked=False): spec.source.image.verify requires a signature and the image
	// has none; retried with backoff (and at each pollInterval).
	ReasonUnsigned = "Unsigned"
	// ReasonSignatureInvalid (Unpacked=False): the image's signatures do not satisfy
	// spec.source.image.verify (another key, tampered with, malformed, or signing another digest).
	// Not retried until the Catalog changes or its pollInterval comes round.
	ReasonSignatureInvalid = "SignatureInvalid"

	// ReasonServing (Serving=True): the content of the current generation is served.
	ReasonServing = "Serving"
	// ReasonServingPreviousContent (Serving=True): the current generation failed to unpack and the
	// content of an earlier generation (status.servedGeneration) is still served.
	ReasonServingPreviousContent = "ServingPreviousContent"
	// ReasonNotServing (Serving=False): no content has been unpacked successfully yet, or the Catalog
	// is being deleted.
	ReasonNotServing = "NotServing"

	// ReasonPaused (Paused=True): spec.paused is true.
	ReasonPaused = "Paused"
	// ReasonNotPaused (Paused=False): spec.paused is false; the Catalog is reconciled.
	ReasonNotPaused = "NotPaused"
)

// CatalogSpec says where a file-based catalog is fetched from and how it ranks against other catalogs.
type CatalogSpec struct {
	// source says where the file-based catalog is fetched from. For Image, the catalog is the
	// directory the image's operators.operatorframework.io.index.configs.v1 label names (/configs by
	// default); for the other types, it is the whole content. ConfigMaps and Secrets named by the
	// source are read from catalogd's namespace.
	// +required
	Source rukpakv1alpha1.Source `json:"source"`

	// priority breaks ties when several catalogs offer the same bundle during resolution: the
	// catalog with the higher priority wins. Negative values are allowed. Defaults to 0.
	// +optional
	// +kubebuilder:default=0
	Priority int32 `json:"priority,omitempty"`

	// paused stops reconciling this Catalog while true: nothing is unpacked or polled, and changes
	// to the spec or to the source (a re-pushed tag, an edited ConfigMap, a new commit) are not
	// acted on; the content the status names stays served, by every replica. The Paused condition
	// is True and says since when. Setting it back to false (or removing it) resumes: the source
	// is resolved again at once and unpacked if the spec or the source changed. Deleting a paused
	// Catalog still removes its content (the finalizer does not wait for a resume).
	// +optional
	Paused bool `json:"paused,omitempty"`

	// bundleVerify, when set, requires every bundle this catalog lists to be signed under this
	// policy: operator-controller sets it as spec.source.image.verify of every BundleDeployment it
	// creates or updates for a bundle resolved from this catalog, and rukpak refuses the bundle
	// image (reason Unsigned or SignatureInvalid, shown on the Operator's Installed condition)
	// before unpacking it unless it is signed. An Operator has no field to turn it off. It has the
	// shape of spec.source.image.verify, but covers the bundle images, not the catalog image: the
	// Secret it names is read by rukpak, from rukpak's namespace (olmv1-system with the chart),
	// where source.image.verify's Secret is read from catalogd's. Bundles installed directly
	// (an Operator's spec.source.type Bundle) are not from a catalog and keep their own source's
	// verify. When empty, bundles of this catalog are not required to be signed.
	// +optional
	BundleVerify *rukpakv1alpha1.ImageVerification `json:"bundleVerify,omitempty"`
}

// CatalogCounts counts what a file-based catalog contains.
type CatalogCounts struct {
	// packages is the number of olm.package blobs.
	// +required
	Packages int32 `json:"packages"`
	// channels is the number of olm.channel blobs.
	// +required
	Channels int32 `json:"channels"`
	// bundles is the number of olm.bundle blobs.
	// +required
	Bundles int32 `json:"bundles"`
}

// CatalogStatus is what catalogd observed and serves.
type CatalogStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Unpacked, Serving and Paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// resolvedSource is exactly which content was last unpacked successfully (image digest, git
	// commit, http ETag, ConfigMap resourceVersions).
	// +optional
	ResolvedSource *rukpakv1alpha1.ResolvedSource `json:"resolvedSource,omitempty"`

	// contentHash is the sha256 of the canonical form of the served content, as "sha256:<hex>".
	// The same catalog content gives the same hash whatever its source or file order.
	// +optional
	ContentHash string `json:"contentHash,omitempty"`

	// shortHash is the first 12 hex digits of contentHash, for display (the HASH column of
	// `kubectl get catalogs`); enough to tell two contents apart at a glance.
	// +optional
	ShortHash string `json:"shortHash,omitempty"`

	// lastUnpacked is when the served content was last unpacked successfully.
	// +optional
	LastUnpacked *metav1.Time `json:"lastUnpacked,omitempty"`

	// contentURL is the URL where catalogd serves the whole catalog as a stream of JSON blobs
	// (.../catalogs/<name>/all.json).
	// +optional
	ContentURL string `json:"contentURL,omitempty"`

	// servedGeneration is the metadata.generation whose content is served. It is lower than
	// metadata.generation when the latest spec failed to unpack and earlier content is still served.
	// +optional
	ServedGeneration int64 `json:"servedGeneration,omitempty"`

	// counts of the packages, channels and bundles of the served content.
	// +optional
	Counts *CatalogCounts `json:"counts,omitempty"`
}

// Catalog makes catalogd fetch a file-based catalog (FBC) of operators, validate it, and serve its
// content to operator-controller and to users (kubectl get catalogmetadata, status.contentURL).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=olm
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source.type`
// +kubebuilder:printcolumn:name="Serving",type=string,JSONPath=`.status.conditions[?(@.type=="Serving")].status`
// +kubebuilder:printcolumn:name="Unpacked",type=string,JSONPath=`.status.conditions[?(@.type=="Unpacked")].status`
// +kubebuilder:printcolumn:name="Hash",type=string,JSONPath=`.status.shortHash`
// +kubebuilder:printcolumn:name="Content Hash",type=string,JSONPath=`.status.contentHash`,priority=1
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`,priority=1
// +kubebuilder:printcolumn:name="Bundles",type=integer,JSONPath=`.status.counts.bundles`,priority=1
// +kubebuilder:printcolumn:name="Paused",type=string,JSONPath=`.status.conditions[?(@.type=="Paused")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name must be at most 63 characters: it is used as the catalog label value on CatalogMetadata"
type Catalog struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says where the catalog is fetched from.
	// +required
	Spec CatalogSpec `json:"spec"`

	// status is what catalogd observed and serves.
	// +optional
	Status CatalogStatus `json:"status,omitempty"`
}

// CatalogList is a list of Catalogs.
//
// +kubebuilder:object:root=true
type CatalogList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the Catalogs.
	Items []Catalog `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Catalog{}, &CatalogList{})
}
