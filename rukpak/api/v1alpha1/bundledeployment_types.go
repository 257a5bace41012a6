package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProvisionerClassName names the provisioner that turns a bundle's content into Kubernetes objects.
// +kubebuilder:validation:Enum=core-rukpak-io-plain;core-rukpak-io-registry;core-rukpak-io-helm;core-rukpak-io-kustomize
type ProvisionerClassName string

const (
	// ProvisionerPlain applies the plain manifests found under the bundle's /manifests directory.
	ProvisionerPlain ProvisionerClassName = "core-rukpak-io-plain"
	// ProvisionerRegistry converts an OLM registry+v1 bundle (/manifests with a ClusterServiceVersion,
	// /metadata/annotations.yaml) into plain manifests and applies them.
	ProvisionerRegistry ProvisionerClassName = "core-rukpak-io-registry"
	// ProvisionerHelm installs the Helm chart the bundle contains as a Helm release.
	ProvisionerHelm ProvisionerClassName = "core-rukpak-io-helm"
	// ProvisionerKustomize builds the kustomization found at config.path and applies the result.
	ProvisionerKustomize ProvisionerClassName = "core-rukpak-io-kustomize"
)

// UninstallFinalizer is rukpak's finalizer: deleting a BundleDeployment that carries it uninstalls
// what it applied (or orphans it, deletionPolicy Orphan) before rukpak removes the finalizer. rukpak
// adds it to every BundleDeployment it reconciles; a client that creates a BundleDeployment may set
// it at creation (operator-controller does), which spares rukpak a write. rukpak removes it also
// from a BundleDeployment it never installed, so it only ever waits for a running rukpak.
const UninstallFinalizer = "core.rukpak.io/uninstall"

// Condition types of a BundleDeployment.
const (
	// TypeUnpacked is True when the content of the current spec.source was fetched and parsed.
	TypeUnpacked = "Unpacked"
	// TypeInstalled is True when the objects of the bundle were applied to the cluster.
	TypeInstalled = "Installed"
	// TypeHealthy is True when every object the bundle installed reports itself ready
	// (Deployments available, CRDs established, ...).
	TypeHealthy = "Healthy"
	// TypePaused is True while spec.paused is true: nothing is unpacked, applied, pruned or
	// health-checked, and the other conditions keep what they said when the pause began. Its
	// lastTransitionTime (and message) say since when.
	TypePaused = "Paused"
)

// Condition reasons of a BundleDeployment.
const (
	// ReasonUnpackPending (Unpacked=False or Unknown): the content has not been fetched yet.
	ReasonUnpackPending = "UnpackPending"
	// ReasonUnpackSucceeded (Unpacked=True): the content was fetched and parsed.
	ReasonUnpackSucceeded = "UnpackSucceeded"
	// ReasonUnpackFailed (Unpacked=False): the content could not be fetched; the message says why.
	ReasonUnpackFailed = "UnpackFailed"
	// ReasonInvalidBundle (Unpacked=False): the content was fetched but is not a valid bundle for
	// the provisioner.
	ReasonInvalidBundle = "InvalidBundle"

	// ReasonInstallPending (Installed=False or Unknown): nothing was applied yet.
	ReasonInstallPending = "InstallPending"
	// ReasonInstallationSucceeded (Installed=True): the bundle's objects were applied.
	ReasonInstallationSucceeded = "InstallationSucceeded"
	// ReasonInstallFailed (Installed=False): applying the bundle's objects failed; the message says why.
	ReasonInstallFailed = "InstallFailed"
	// ReasonUpgradeFailed (Installed=False): moving from the installed revision to a new one failed;
	// the previous revision is left in place.
	ReasonUpgradeFailed = "UpgradeFailed"
	// ReasonObjectConflict (Installed=False): an object of the bundle already exists and is not
	// owned by this BundleDeployment, and spec.collisionPolicy does not allow taking it over. Nothing
	// was changed; the message names the object and its current owner.
	ReasonObjectConflict = "ObjectConflict"
	// ReasonReleaseCorrupt (Installed=False): a revision record (release Secret) cannot be read.
	// rukpak changes nothing until it is set aside or deleted; the message names the Secret and how.
	ReasonReleaseCorrupt = "ReleaseCorrupt"
	// ReasonRenderLimitExceeded (Unpacked=False): rendering a Helm chart's templates took longer or
	// produced more than rukpak's limits (--helm-render-timeout, --helm-render-max-bytes).
	ReasonRenderLimitExceeded = "RenderLimitExceeded"

	// ReasonHealthy (Healthy=True): every installed object reports itself ready.
	ReasonHealthy = "Healthy"
	// ReasonUnhealthy (Healthy=False): at least one installed object is not ready; the message names it.
	ReasonUnhealthy = "Unhealthy"
	// ReasonHealthUnknown (Healthy=Unknown): health cannot be assessed yet (e.g. nothing installed).
	ReasonHealthUnknown = "HealthUnknown"
	// ReasonProgressDeadlineExceeded (Healthy=False): the installed revision never became Healthy
	// within spec.progressDeadline of being applied; the message names what is not ready. With
	// upgradeFailurePolicy Rollback the previous healthy revision is being re-applied.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonRollbackBlocked (Healthy=False): the installed revision exceeded spec.progressDeadline and
	// upgradeFailurePolicy is Rollback, but rolling back is not possible (no earlier revision was ever
	// healthy, or its CustomResourceDefinitions cannot replace the installed ones safely). The
	// revision is held as it is; the message says why.
	ReasonRollbackBlocked = "RollbackBlocked"

	// ReasonProgressionProbeWaiting (Healthy=False): an installed object fails an assertion of a
	// spec.progressionProbes entry; the message names the probe, the object and the assertion with
	// the value observed.
	ReasonProgressionProbeWaiting = "ProgressionProbeWaiting"
	// ReasonInvalidProgressionProbe (Installed=False): a probe of spec.progressionProbes cannot be
	// used (a CEL expression that does not compile, a label selector that does not parse); nothing
	// is applied until the spec is fixed. The message names the probe and the error.
	ReasonInvalidProgressionProbe = "InvalidProgressionProbe"

	// ReasonPaused (Paused=True): spec.paused is true.
	ReasonPaused = "Paused"
	// ReasonNotPaused (Paused=False): spec.paused is false; the BundleDeployment is reconciled.
	ReasonNotPaused = "NotPaused"
)

// UpgradeFailurePolicy says what happens when an installed revision is not Healthy within
// spec.progressDeadline.
// +kubebuilder:validation:Enum=Hold;Rollback
type UpgradeFailurePolicy string

const (
	// UpgradeFailurePolicyHold (the default) reports Healthy=False, reason ProgressDeadlineExceeded,
	// and leaves the revision installed.
	UpgradeFailurePolicyHold UpgradeFailurePolicy = "Hold"
	// UpgradeFailurePolicyRollback re-applies the newest earlier revision that was Healthy, as a new
	// revision, unless that would be unsafe for the CustomResourceDefinitions (then RollbackBlocked).
	UpgradeFailurePolicyRollback UpgradeFailurePolicy = "Rollback"
)

// CollisionPolicy says what rukpak does when an object of the bundle already exists and is not
// owned by the BundleDeployment installing it.
// +kubebuilder:validation:Enum=Prevent;IfNoController;None
type CollisionPolicy string

const (
	// CollisionPolicyPrevent (the default) never touches an existing object that this
	// BundleDeployment does not own: the install stops with Installed=False, reason ObjectConflict.
	CollisionPolicyPrevent CollisionPolicy = "Prevent"
	// CollisionPolicyIfNoController adopts an existing object that has no controller ownerReference
	// and is not owned by another BundleDeployment (e.g. an operator installed by hand or by another
	// tool, moving to OLM). Objects of other BundleDeployments are never taken.
	CollisionPolicyIfNoController CollisionPolicy = "IfNoController"
	// CollisionPolicyNone takes over any existing object, including one that another
	// BundleDeployment or controller owns. Dangerous: the other owner may fight over it, and deleting
	// this BundleDeployment deletes it.
	CollisionPolicyNone CollisionPolicy = "None"
)

// DeletionPolicy says what happens to the installed objects when the BundleDeployment is deleted.
// +kubebuilder:validation:Enum=Delete;Orphan
type DeletionPolicy string

const (
	// DeletionPolicyDelete (the default) deletes every object the BundleDeployment still owns.
	// CustomResourceDefinitions are kept (and with them every custom resource) unless the
	// BundleDeployment has the annotation core.rukpak.io/delete-crds-on-uninstall: "true".
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyOrphan removes rukpak's ownership marks from every object it owns and leaves
	// them all running, CRDs and custom resources included.
	DeletionPolicyOrphan DeletionPolicy = "Orphan"
)

// BundleDeploymentSpec says which bundle to install, how, and where.
//
// +kubebuilder:validation:XValidation:rule="!has(self.config) || (!has(self.config.values) && !has(self.config.valuesFrom)) || self.provisionerClassName == 'core-rukpak-io-helm'",message="config.values and config.valuesFrom can only be used with provisionerClassName core-rukpak-io-helm"
// +kubebuilder:validation:XValidation:rule="!has(self.config) || (!has(self.config.watchNamespaces) && !has(self.config.deploymentConfig) && !has(self.config.olmv0)) || self.provisionerClassName == 'core-rukpak-io-registry'",message="config.watchNamespaces, config.deploymentConfig and config.olmv0 can only be used with provisionerClassName core-rukpak-io-registry"
// +kubebuilder:validation:XValidation:rule="!has(self.config) || !has(self.config.path) || self.provisionerClassName == 'core-rukpak-io-kustomize'",message="config.path can only be used with provisionerClassName core-rukpak-io-kustomize"
// +kubebuilder:validation:XValidation:rule="!has(self.upgradeFailurePolicy) || self.upgradeFailurePolicy != 'Rollback' || has(self.progressDeadline)",message="upgradeFailurePolicy Rollback needs spec.progressDeadline: it decides when a revision has failed"
type BundleDeploymentSpec struct {
	// provisionerClassName names the provisioner that turns the bundle into objects:
	// core-rukpak-io-plain (plain manifests), core-rukpak-io-registry (OLM registry+v1 bundle),
	// core-rukpak-io-helm (Helm chart) or core-rukpak-io-kustomize (kustomization).
	// It cannot be changed after creation.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="provisionerClassName is immutable; delete and recreate the BundleDeployment to change it"
	ProvisionerClassName ProvisionerClassName `json:"provisionerClassName"`

	// source says where the bundle's content is fetched from.
	// +required
	Source Source `json:"source"`

	// installNamespace is the namespace the bundle is installed into: namespaced objects that do not
	// name a namespace are created there, and it is the Helm release namespace. It must exist.
	// It cannot be changed after creation.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="installNamespace is immutable; delete and recreate the BundleDeployment to move it"
	InstallNamespace string `json:"installNamespace"`

	// config tunes how the provisioner renders the bundle. Which fields apply depends on
	// provisionerClassName: watchNamespaces and deploymentConfig for core-rukpak-io-registry,
	// values and valuesFrom for core-rukpak-io-helm, path for core-rukpak-io-kustomize.
	// +optional
	Config *BundleConfig `json:"config,omitempty"`

	// collisionPolicy says what to do when an object of the bundle already exists and this
	// BundleDeployment does not own it (it lacks the labels core.rukpak.io/owner-kind=BundleDeployment
	// and core.rukpak.io/owner-name=<this name>). Prevent (the default when empty) leaves the object
	// alone and reports Installed=False with reason ObjectConflict, naming the object and its owner.
	// IfNoController adopts objects that have no controller ownerReference and no other
	// BundleDeployment owner. None takes over any object (dangerous: deleting this BundleDeployment
	// then deletes objects others created).
	// +optional
	CollisionPolicy CollisionPolicy `json:"collisionPolicy,omitempty"`

	// deletionPolicy says what deleting this BundleDeployment does to the objects it installed.
	// Delete (the default when empty) deletes every object it still owns at that moment, except
	// CustomResourceDefinitions unless the annotation core.rukpak.io/delete-crds-on-uninstall is
	// "true". Orphan removes the ownership labels and leaves every object in place.
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// paused stops reconciling this BundleDeployment while true: nothing is unpacked, applied,
	// pruned or health-checked, and drift is not reverted; the installed objects keep running as
	// they are. The Paused condition is True and says since when. Setting it back to false (or
	// removing it) resumes: the current spec is unpacked and applied as usual. Deleting a paused
	// BundleDeployment still uninstalls it (the finalizer does not wait for a resume).
	// +optional
	Paused bool `json:"paused,omitempty"`

	// progressDeadline is how long an install or upgrade may take to become Healthy, e.g. "10m",
	// counted from when its revision was applied. A revision that was never Healthy past it gets
	// Healthy=False with reason ProgressDeadlineExceeded, and upgradeFailurePolicy decides what
	// follows. Unset: no deadline (Healthy=False, reason Unhealthy, for as long as it takes).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="progressDeadline must be a duration of at least 1s, e.g. 10m"
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`

	// upgradeFailurePolicy says what happens when a revision exceeds progressDeadline. Hold (the
	// default when empty) only reports it. Rollback re-applies the newest earlier revision that was
	// Healthy as a new revision (status.history says why) and does not try the failed content again
	// until the spec changes; when no earlier revision was Healthy, or the failed revision changed
	// CustomResourceDefinitions in a way the earlier revision cannot undo (a stored version it does
	// not have, a changed scope, custom resources its schema rejects), nothing is rolled back and
	// Healthy=False has reason RollbackBlocked. Rollback needs progressDeadline.
	// +optional
	UpgradeFailurePolicy UpgradeFailurePolicy `json:"upgradeFailurePolicy,omitempty"`

	// progressionProbes are readiness checks of the bundle's own objects, on top of the built-in ones
	// (Deployments available, CRDs established, ...): every installed object a probe's selector
	// matches must pass all of the probe's assertions before the BundleDeployment is Healthy. While
	// a probe waits, the Healthy condition (reason ProgressionProbeWaiting) names the probe, the
	// object and the failing assertion with the value it observed, e.g. `progression probe
	// "widget-ready" waits on Widget ns/w1: .status.phase is "Provisioning", want "Ready"`. CEL
	// expressions are compiled when the spec is read; one that does not compile stops the install
	// with Installed=False, reason InvalidProgressionProbe. With probes, a new revision is applied
	// in phases (namespaces, policies, RBAC, CRDs, storage, workloads, webhooks, then the rest): a
	// phase whose objects a probe waits on holds the later phases back (Installed=False, reason
	// ProgressionProbeWaiting), and nothing is pruned until every phase passed.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	ProgressionProbes []ProgressionProbe `json:"progressionProbes,omitempty"`
}

// ProgressionProbe is one readiness check: the objects it selects and what must hold for each.
type ProgressionProbe struct {
	// name identifies the probe in conditions and events, e.g. "widget-ready".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// selector chooses, among the objects this BundleDeployment installed, those the probe checks.
	// +required
	Selector ProbeSelector `json:"selector"`

	// assertions must all hold for every selected object, in order; the first that does not is
	// reported.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Assertions []ProbeAssertion `json:"assertions"`
}

// ProbeSelector chooses installed objects by their kind (group, kind or both) or by their labels.
//
// +kubebuilder:validation:XValidation:rule="has(self.group) || has(self.kind) || has(self.labelSelector)",message="selector needs group and/or kind, or labelSelector"
// +kubebuilder:validation:XValidation:rule="!has(self.labelSelector) || (!has(self.group) && !has(self.kind))",message="selector takes either group/kind or labelSelector, not both"
type ProbeSelector struct {
	// group is the API group of the selected objects, e.g. "apps" or "example.com". Unset: any
	// group (select core kinds such as ConfigMap by kind alone).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Group string `json:"group,omitempty"`

	// kind of the selected objects, e.g. "Widget". Unset: every kind of group.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9]*$`
	Kind string `json:"kind,omitempty"`

	// labelSelector selects the objects whose labels (as the bundle renders them) match.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// ProbeAssertionType names the kind of check a ProbeAssertion makes.
// +kubebuilder:validation:Enum=Condition;FieldValue;FieldsEqual;CEL
type ProbeAssertionType string

const (
	// ProbeAssertionCondition checks status.conditions[type].status.
	ProbeAssertionCondition ProbeAssertionType = "Condition"
	// ProbeAssertionFieldValue checks that a field has a given value.
	ProbeAssertionFieldValue ProbeAssertionType = "FieldValue"
	// ProbeAssertionFieldsEqual checks that two fields hold the same value.
	ProbeAssertionFieldsEqual ProbeAssertionType = "FieldsEqual"
	// ProbeAssertionCEL evaluates a CEL expression over the object.
	ProbeAssertionCEL ProbeAssertionType = "CEL"
)

// ProbeAssertion is one check of an object: a union selected by type, with the member of the same
// name set (condition, fieldValue, fieldsEqual or cel).
//
// +kubebuilder:validation:XValidation:rule="self.type == 'Condition' ? has(self.condition) : !has(self.condition)",message="condition must be set exactly when type is Condition"
// +kubebuilder:validation:XValidation:rule="self.type == 'FieldValue' ? has(self.fieldValue) : !has(self.fieldValue)",message="fieldValue must be set exactly when type is FieldValue"
// +kubebuilder:validation:XValidation:rule="self.type == 'FieldsEqual' ? has(self.fieldsEqual) : !has(self.fieldsEqual)",message="fieldsEqual must be set exactly when type is FieldsEqual"
// +kubebuilder:validation:XValidation:rule="self.type == 'CEL' ? has(self.cel) : !has(self.cel)",message="cel must be set exactly when type is CEL"
type ProbeAssertion struct {
	// type is Condition, FieldValue, FieldsEqual or CEL, and says which other field is set.
	// +required
	Type ProbeAssertionType `json:"type"`

	// condition holds when the object's status.conditions has an entry of this type with this
	// status.
	// +optional
	Condition *ConditionAssertion `json:"condition,omitempty"`

	// fieldValue holds when the field at fieldPath has value.
	// +optional
	FieldValue *FieldValueAssertion `json:"fieldValue,omitempty"`

	// fieldsEqual holds when the fields at fieldA and fieldB are both set and equal, e.g.
	// .status.observedGeneration and .metadata.generation.
	// +optional
	FieldsEqual *FieldsEqualAssertion `json:"fieldsEqual,omitempty"`

	// cel holds when its expression evaluates to true.
	// +optional
	CEL *CELAssertion `json:"cel,omitempty"`
}

// ConditionAssertion checks one condition of an object's status.conditions.
type ConditionAssertion struct {
	// type of the condition, e.g. "Ready".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	Type string `json:"type"`

	// status the condition must have: True, False or Unknown.
	// +required
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status metav1.ConditionStatus `json:"status"`
}

// FieldValueAssertion checks the value of one field.
type FieldValueAssertion struct {
	// fieldPath is a dotted path into the object starting with a dot, e.g. ".status.phase"; a
	// segment that is a number indexes a list (".status.conditions.0.type"). Keys that contain a
	// dot or a slash (most annotations) need a CEL assertion instead.
	// +required
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^(\.[A-Za-z0-9_-]+)+$`
	FieldPath string `json:"fieldPath"`

	// value the field must have, written as a string: a string field is compared as it is, any
	// other field as its JSON (e.g. "true", "3", `["a"]`).
	// +required
	// +kubebuilder:validation:MaxLength=1024
	Value string `json:"value"`
}

// FieldsEqualAssertion checks that two fields of an object hold the same value.
type FieldsEqualAssertion struct {
	// fieldA is the dotted path of the first field, e.g. ".status.observedGeneration".
	// +required
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^(\.[A-Za-z0-9_-]+)+$`
	FieldA string `json:"fieldA"`

	// fieldB is the dotted path of the second field, e.g. ".metadata.generation".
	// +required
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^(\.[A-Za-z0-9_-]+)+$`
	FieldB string `json:"fieldB"`
}

// CELAssertion is a CEL expression over the object.
type CELAssertion struct {
	// expression is a CEL expression that must evaluate to a bool, with the object as self, e.g.
	// "self.status.readyReplicas >= 2". A field that is not set makes it fail (guard with has()).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Expression string `json:"expression"`
}

// OLMv0Rendering is what OLM v0 put on the webhook Deployments of an operator OLM v1 adopts.
type OLMv0Rendering struct {
	// caHash is the olmcahash annotation OLM v0 set on the pod templates of the webhook Deployments
	// (the SHA-256 of the CA that signed their serving certificates, hex-encoded). It is kept there,
	// unchanged: the certificate OLM v1 issues is picked up by the kubelet without a new pod.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[0-9a-f]*$`
	CAHash string `json:"caHash,omitempty"`

	// caBundle holds, PEM-encoded, the CA certificates that signed the serving certificates OLM v0
	// issued. They are trusted beside rukpak's own in the webhook configurations and conversion
	// webhooks rendered for the bundle, so that the API server keeps reaching the pods until the
	// kubelet has given them the certificate rukpak issues (about a minute); then they can be removed.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	CABundle []byte `json:"caBundle,omitempty"`
}

// BundleConfig tunes how a bundle is rendered. Each field applies to one provisioner only.
type BundleConfig struct {
	// watchNamespaces (registry+v1) lists the namespaces the operator watches, which selects the
	// install mode of its ClusterServiceVersion: the install namespace alone for OwnNamespace, one
	// other namespace for SingleNamespace, several for MultiNamespace. When empty, AllNamespaces is
	// used if the CSV supports it, else OwnNamespace; the Installed message names the mode used.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	WatchNamespaces []string `json:"watchNamespaces,omitempty"`

	// deploymentConfig (registry+v1) overrides settings of every Deployment the
	// ClusterServiceVersion declares, like OLM v0's Subscription.spec.config.
	// +optional
	DeploymentConfig *DeploymentConfig `json:"deploymentConfig,omitempty"`

	// olmv0 (registry+v1) renders the webhook Deployments the way OLM v0 did, so that an operator
	// OLM v0 installed keeps its pod templates, and its pods, when OLM v1 adopts it (`kubectl olmv1
	// migrate` sets it; see docs/migration.md). A webhook Deployment then gets its serving
	// certificate as OLM v0's volumes apiservice-cert and webhook-cert (instead of
	// rukpak-apiservice-cert and rukpak-webhook-cert), and its pod template loses the annotations of
	// the bundle's own deployment spec, as under OLM v0. Setting or removing it on a running operator
	// rolls out its webhook Deployments once.
	// +optional
	OLMv0 *OLMv0Rendering `json:"olmv0,omitempty"`

	// values (helm) are Helm values, as a YAML/JSON object, merged over the chart's defaults and
	// over valuesFrom.
	// +optional
	// +kubebuilder:validation:Type=object
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// valuesFrom (helm) lists Secrets and ConfigMaps in installNamespace whose key holds a YAML
	// document of Helm values. They are merged in order, later entries winning; values wins over all.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`

	// path (kustomize) is the directory of the bundle, relative to its root, that holds the
	// kustomization.yaml to build. When empty the root is used.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="path must be relative (must not start with '/')"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.](/|$)')",message="path must not contain '..' elements"
	Path string `json:"path,omitempty"`
}

// DeploymentConfig overrides settings of the Deployments of a registry+v1 bundle.
// Every field that is set replaces (env and tolerations: extends) what the bundle declares.
type DeploymentConfig struct {
	// env adds environment variables to every container, replacing variables of the same name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	Env []corev1.EnvVar `json:"env,omitempty"`

	// resources replaces the resource requests and limits of every container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// nodeSelector replaces the node selector of the pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations are added to the tolerations of the pods.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// affinity replaces the affinity of the pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// envFrom adds sources of environment variables (ConfigMaps, Secrets) to every container.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// volumes are added to the pods, replacing volumes of the same name.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// volumeMounts are added to every container, replacing mounts at the same path.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// annotations are added to the pod template of every Deployment, replacing annotations with the
	// same key.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ValuesReference points at a key of a Secret or ConfigMap holding Helm values.
type ValuesReference struct {
	// kind of the object holding the values: Secret or ConfigMap.
	// +required
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	Kind string `json:"kind"`

	// name of the Secret or ConfigMap, in the BundleDeployment's installNamespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key of the data whose value is the YAML document of values. Defaults to values.yaml.
	// +optional
	// +kubebuilder:default=values.yaml
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`

	// optional makes a missing object or key an empty set of values instead of an error.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// BundleDeploymentStatus is what the controller observed and did.
type BundleDeploymentStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Unpacked, Installed, Healthy and Paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// resolvedSource is exactly which content was last unpacked (image digest, git commit, ...).
	// +optional
	ResolvedSource *ResolvedSource `json:"resolvedSource,omitempty"`

	// contentHash is the sha256 of the last unpacked content, as "sha256:<hex>".
	// +optional
	ContentHash string `json:"contentHash,omitempty"`

	// installedRevision is the revision that is installed; it grows by one each time different
	// content or config is applied. 0 when nothing was installed yet.
	// +optional
	InstalledRevision int64 `json:"installedRevision,omitempty"`

	// history lists the most recent installed revisions, newest first (at most 10).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	History []BundleDeploymentRevision `json:"history,omitempty"`
}

// BundleDeploymentRevision records one installed revision.
type BundleDeploymentRevision struct {
	// revision number.
	// +required
	Revision int64 `json:"revision"`

	// contentHash of the content installed by this revision.
	// +optional
	ContentHash string `json:"contentHash,omitempty"`

	// resolvedSource the content of this revision came from.
	// +optional
	ResolvedSource *ResolvedSource `json:"resolvedSource,omitempty"`

	// installedAt is when this revision was applied.
	// +required
	InstalledAt metav1.Time `json:"installedAt"`

	// healthyAt is when this revision was first seen Healthy; unset while it never was. The
	// revision an upgradeFailurePolicy Rollback returns to is the newest earlier one that has it.
	// +optional
	HealthyAt *metav1.Time `json:"healthyAt,omitempty"`

	// description says how this revision came about when it was not a plain install or upgrade of
	// the spec, e.g. "rollback to revision 1: revision 2 was not Healthy within the progress
	// deadline (10m0s): Deployment ns/web is not ready: ...".
	// +optional
	Description string `json:"description,omitempty"`

	// chartVersion (helm) is the version of the chart this revision installed (Chart.yaml version).
	// +optional
	ChartVersion string `json:"chartVersion,omitempty"`

	// valuesHash (helm) is "sha256:<hex>" of the merged user values (valuesFrom in order, then
	// values) this revision was rendered with, as canonical JSON: the same values give the same hash,
	// whatever their source. The chart's own defaults are not included (chartVersion covers them).
	// +optional
	ValuesHash string `json:"valuesHash,omitempty"`
}

// BundleDeployment installs the content of one bundle (plain manifests, an OLM registry+v1 bundle, a
// Helm chart or a kustomization) into the cluster, upgrades it when its spec changes, and reports
// whether what it installed is healthy. Deleting it removes everything it installed.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=bd;bds,categories=olm
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Provisioner",type=string,JSONPath=`.spec.provisionerClassName`
// +kubebuilder:printcolumn:name="Install Namespace",type=string,JSONPath=`.spec.installNamespace`
// +kubebuilder:printcolumn:name="Installed",type=string,JSONPath=`.status.conditions[?(@.type=="Installed")].status`
// +kubebuilder:printcolumn:name="Healthy",type=string,JSONPath=`.status.conditions[?(@.type=="Healthy")].status`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.installedRevision`
// +kubebuilder:printcolumn:name="Paused",type=string,JSONPath=`.status.conditions[?(@.type=="Paused")].status`,priority=1
// +kubebuilder:printcolumn:name="Unpacked",type=string,JSONPath=`.status.conditions[?(@.type=="Unpacked")].status`,priority=1
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source.type`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name must be at most 63 characters: it is used as a label value on the installed objects"
type BundleDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which bundle to install, how, and where.
	// +required
	Spec BundleDeploymentSpec `json:"spec"`

	// status is what the controller observed and did.
	// +optional
	Status BundleDeploymentStatus `json:"status,omitempty"`
}

// BundleDeploymentList is a list of BundleDeployments.
//
// +kubebuilder:object:root=true
type BundleDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the BundleDeployments.
	Items []BundleDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BundleDeployment{}, &BundleDeploymentList{})
}
