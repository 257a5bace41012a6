package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// UpgradeConstraintPolicy says whether upgrades must follow the catalog's upgrade edges.
// +kubebuilder:validation:Enum=Enforce;Ignore
type UpgradeConstraintPolicy string

const (
	// UpgradeConstraintPolicyEnforce only moves an installed bundle along the catalog's upgrade edges
	// (replaces, skips, skipRange).
	UpgradeConstraintPolicyEnforce UpgradeConstraintPolicy = "Enforce"
	// UpgradeConstraintPolicyIgnore allows any bundle that matches version and channel, including
	// downgrades and jumps across missing edges.
	UpgradeConstraintPolicyIgnore UpgradeConstraintPolicy = "Ignore"
)

// UpgradePolicy says whether upgrades happen by themselves or wait for approval.
// +kubebuilder:validation:Enum=Automatic;Manual
type UpgradePolicy string

const (
	// UpgradePolicyAutomatic installs the best resolved bundle as soon as it is found.
	UpgradePolicyAutomatic UpgradePolicy = "Automatic"
	// UpgradePolicyManual keeps the installed bundle until spec.approvedVersion names the upgrade.
	UpgradePolicyManual UpgradePolicy = "Manual"
)

// UpgradeScope says how far upgrades go by themselves from the installed version (the semver guard
// rails).
// +kubebuilder:validation:Enum=SemverCompatible;AnyVersion
type UpgradeScope string

const (
	// UpgradeScopeSemverCompatible upgrades by itself only to versions semver calls compatible with
	// the installed one: the same major version from 1.0.0 on, the same minor version in 0.x, and
	// never in 0.0.x. A newer version beyond that is reported (UpgradeAvailable, reason
	// SemverGuardRail) and waits for spec.version, spec.approvedVersion or AnyVersion.
	UpgradeScopeSemverCompatible UpgradeScope = "SemverCompatible"
	// UpgradeScopeAnyVersion follows every upgrade the catalogs offer (every upgrade edge under
	// upgradeConstraintPolicy Enforce, any version under Ignore), across major versions too.
	UpgradeScopeAnyVersion UpgradeScope = "AnyVersion"
)

// DependencyPolicy says who provides the packages a bundle depends on.
// +kubebuilder:validation:Enum=Require;Install
type DependencyPolicy string

const (
	// DependencyPolicyRequire resolves a bundle's dependencies (olm.package.required,
	// olm.gvk.required, olm.constraint) only from packages other Operators install: the Resolved
	// condition names every missing package and the Operator to create for it.
	DependencyPolicyRequire DependencyPolicy = "Require"
	// DependencyPolicyInstall lets operator-controller create an Operator for each package needed to
	// satisfy the bundle's dependencies, resolved together with everything else.
	DependencyPolicyInstall DependencyPolicy = "Install"
)

// SourceType says where an Operator's bundle comes from. It is the discriminator of
// OperatorSource.
// +kubebuilder:validation:Enum=Catalog;Bundle
type SourceType string

const (
	// SourceTypeCatalog resolves the bundle from the Catalogs (packageName, version, channels ...).
	SourceTypeCatalog SourceType = "Catalog"
	// SourceTypeBundle installs the bundle that spec.source.bundle names, without resolution.
	SourceTypeBundle SourceType = "Bundle"
)

// BundleFormat says what kind of bundle a direct install's source holds, which decides the rukpak
// provisioner that installs it.
// +kubebuilder:validation:Enum=RegistryV1;Plain;Helm;Kustomize
type BundleFormat string

const (
	// BundleFormatRegistryV1 is an OLM registry+v1 bundle (manifests/ with a ClusterServiceVersion,
	// metadata/annotations.yaml), installed by core-rukpak-io-registry.
	BundleFormatRegistryV1 BundleFormat = "RegistryV1"
	// BundleFormatPlain is a directory of plain manifests (plain+v0), installed by core-rukpak-io-plain.
	BundleFormatPlain BundleFormat = "Plain"
	// BundleFormatHelm is a Helm chart, installed by core-rukpak-io-helm.
	BundleFormatHelm BundleFormat = "Helm"
	// BundleFormatKustomize is a kustomization, installed by core-rukpak-io-kustomize.
	BundleFormatKustomize BundleFormat = "Kustomize"
)

// OperatorSource says where the Operator's bundle comes from: resolved from the Catalogs (type
// Catalog, the default) or named directly (type Bundle).
//
// +kubebuilder:validation:XValidation:rule="self.type != 'Bundle' || has(self.bundle)",message="bundle is required when type is Bundle: set spec.source.bundle.source to the image, git repository or URL of the bundle"
// +kubebuilder:validation:XValidation:rule="self.type == 'Bundle' || !has(self.bundle)",message="bundle must not be set unless type is Bundle"
type OperatorSource struct {
	// type is Catalog (the default: the bundle is resolved from the Catalogs by packageName, version
	// and channels, and upgraded as they change) or Bundle (the bundle spec.source.bundle names is
	// installed as it is: no resolution, no catalog, upgrades by changing the reference).
	// +optional
	// +unionDiscriminator
	// +kubebuilder:default=Catalog
	Type SourceType `json:"type,omitempty"`

	// bundle names the bundle to install when type is Bundle. Required when type is Bundle,
	// forbidden otherwise.
	// +optional
	// +unionMember
	Bundle *DirectBundle `json:"bundle,omitempty"`
}

// DirectBundle is a bundle installed without a catalog: where it is and what format it is in.
type DirectBundle struct {
	// source is where the bundle's content is pulled from, exactly as a BundleDeployment's
	// spec.source takes it: an image, a git repository, an http(s) URL, or ConfigMaps in rukpak's
	// namespace. Secrets it names (pullSecret, authSecret, caSecret) are read from rukpak's namespace.
	// Changing it upgrades (or downgrades) the installed bundle to the new content.
	// +required
	Source rukpakv1alpha1.Source `json:"source"`

	// format is what the source holds: RegistryV1 (the default: an OLM registry+v1 bundle), Plain
	// (plain manifests), Helm (a chart) or Kustomize (a kustomization). It picks the rukpak
	// provisioner and cannot be changed once set: delete and recreate the Operator instead.
	// +optional
	// +kubebuilder:default=RegistryV1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="format is immutable: the provisioner of an installed bundle cannot change; delete and recreate the Operator to install another format"
	Format BundleFormat `json:"format,omitempty"`
}

// IsDirect reports whether the Operator installs a bundle directly (spec.source.type Bundle), without
// resolution.
func (s *OperatorSpec) IsDirect() bool {
	return s.Source != nil && s.Source.Type == SourceTypeBundle && s.Source.Bundle != nil
}

// LabelDependency marks an Operator that operator-controller created to satisfy the dependencies of
// Operators with dependencyPolicy Install (value "true"); each of them is an ownerReference of it.
const LabelDependency = "operators.operatorframework.io/dependency"

// Condition types of an Operator.
const (
	// TypeResolved is True when a bundle satisfying the spec and every other Operator was found.
	TypeResolved = "Resolved"
	// TypeInstalled is True when the resolved bundle is installed (its BundleDeployment is Installed).
	TypeInstalled = "Installed"
	// TypeHealthy is True when the installed objects are healthy (the BundleDeployment is Healthy).
	TypeHealthy = "Healthy"
	// TypePaused is True while spec.paused is true.
	TypePaused = "Paused"
	// TypeDeprecated is True when the package, the channel or the installed bundle is deprecated in
	// its catalog; the message carries the catalog's deprecation message.
	TypeDeprecated = "Deprecated"
	// TypeUpgradeAvailable is True when a newer bundle than the installed one is available and waits:
	// for approval (upgradePolicy Manual; the message names the version and the command that
	// approves it), or because it is beyond the semver guard rails (spec.upgradeScope; the message
	// names the version, why it waits and how to take it).
	TypeUpgradeAvailable = "UpgradeAvailable"
)

// Condition reasons of an Operator.
const (
	// ReasonResolutionPending (Resolved=Unknown): resolution has not run yet for this generation.
	ReasonResolutionPending = "ResolutionPending"
	// ReasonResolutionSucceeded (Resolved=True): a bundle was chosen.
	ReasonResolutionSucceeded = "ResolutionSucceeded"
	// ReasonDirectBundle (Resolved=True): spec.source.type is Bundle; nothing is resolved, the
	// bundle spec.source.bundle names is installed as it is.
	ReasonDirectBundle = "DirectBundle"
	// ReasonResolutionFailed (Resolved=False): no bundle satisfies every constraint; the message
	// names the package, the constraint and the candidates that failed.
	ReasonResolutionFailed = "ResolutionFailed"

	// ReasonInstallationPending (Installed=False): the BundleDeployment has not been installed yet.
	ReasonInstallationPending = "InstallationPending"
	// ReasonInstallationSucceeded (Installed=True): the resolved bundle is installed.
	ReasonInstallationSucceeded = "InstallationSucceeded"
	// ReasonInstallationFailed (Installed=False): installing the bundle failed; the message carries
	// the BundleDeployment's message.
	ReasonInstallationFailed = "InstallationFailed"
	// ReasonInstallationStatusUnknown (Installed=Unknown): the BundleDeployment has not reported yet.
	ReasonInstallationStatusUnknown = "InstallationStatusUnknown"

	// ReasonHealthy (Healthy=True): every installed object is ready.
	ReasonHealthy = "Healthy"
	// ReasonUnhealthy (Healthy=False): at least one installed object is not ready.
	ReasonUnhealthy = "Unhealthy"
	// ReasonHealthUnknown (Healthy=Unknown): nothing is installed yet, or health was not reported.
	ReasonHealthUnknown = "HealthUnknown"
	// ReasonProgressDeadlineExceeded (Healthy=False): the install or upgrade was not Healthy within
	// spec.progressDeadline (the BundleDeployment's reason).
	ReasonProgressDeadlineExceeded = rukpakv1alpha1.ReasonProgressDeadlineExceeded
	// ReasonRollbackBlocked (Healthy=False): the failed upgrade could not be rolled back (the
	// BundleDeployment's reason; its message says why).
	ReasonRollbackBlocked = rukpakv1alpha1.ReasonRollbackBlocked
	// ReasonProgressionProbeWaiting (Healthy=False): a progression probe waits on an installed
	// object (the BundleDeployment's reason; its message names the probe, the object and the value).
	ReasonProgressionProbeWaiting = rukpakv1alpha1.ReasonProgressionProbeWaiting

	// ReasonPaused (Paused=True): spec.paused is true.
	ReasonPaused = "Paused"
	// ReasonNotPaused (Paused=False): spec.paused is false.
	ReasonNotPaused = "NotPaused"

	// ReasonPackageDeprecated (Deprecated=True): the package is deprecated.
	ReasonPackageDeprecated = "PackageDeprecated"
	// ReasonChannelDeprecated (Deprecated=True): the channel in use is deprecated.
	ReasonChannelDeprecated = "ChannelDeprecated"
	// ReasonBundleDeprecated (Deprecated=True): the installed bundle is deprecated.
	ReasonBundleDeprecated = "BundleDeprecated"
	// ReasonNotDeprecated (Deprecated=False): nothing in use is deprecated.
	ReasonNotDeprecated = "NotDeprecated"

	// ReasonUpgradeAwaitingApproval (UpgradeAvailable=True): a newer bundle is resolvable and waits
	// for spec.approvedVersion.
	ReasonUpgradeAwaitingApproval = "AwaitingApproval"
	// ReasonUpgradeApproved (UpgradeAvailable=True): spec.approvedVersion names the available
	// upgrade and it is being installed.
	ReasonUpgradeApproved = "Approved"
	// ReasonSemverGuardRail (UpgradeAvailable=True): the catalogs offer an upgrade beyond the
	// installed version's semver-compatible range (a newer major; a newer minor in 0.x; any newer
	// 0.0.x), which is not installed by itself: set spec.version to a range that includes it,
	// approve it (upgradePolicy Manual), or set spec.upgradeScope AnyVersion.
	ReasonSemverGuardRail = "SemverGuardRail"
	// ReasonUpgradeBlocked (UpgradeAvailable=True): the installed operator's OperatorCondition
	// (operators.coreos.com/v2, named like its ClusterServiceVersion, in the install namespace) says
	// Upgradeable=False, in spec.conditions (set by the operator) or spec.overrides (set by an
	// admin): the resolved upgrade waits, and is installed once that condition is removed or True
	// (or an override Upgradeable=True is added).
	ReasonUpgradeBlocked = "UpgradeBlocked"
	// ReasonUpToDate (UpgradeAvailable=False): the installed bundle is the best resolvable one.
	ReasonUpToDate = "UpToDate"
)

// OperatorSpec says which package to install, which versions are acceptable, and how to upgrade.
//
// +kubebuilder:validation:XValidation:rule="!has(self.approvedVersion) || (has(self.upgradePolicy) && self.upgradePolicy == 'Manual')",message="approvedVersion can only be set when upgradePolicy is Manual"
// +kubebuilder:validation:XValidation:rule="!has(self.watchNamespaces) || !has(self.config) || !has(self.config.watchNamespaces)",message="set watchNamespaces in spec.watchNamespaces or in spec.config.watchNamespaces, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.channel) || size(self.channel) == 0 || !has(self.channels) || size(self.channels) == 0",message="set channel or channels, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.upgradeFailurePolicy) || self.upgradeFailurePolicy != 'Rollback' || has(self.progressDeadline)",message="upgradeFailurePolicy Rollback needs spec.progressDeadline: it decides when an upgrade has failed"
// +kubebuilder:validation:XValidation:rule="(has(self.source) && self.source.type == 'Bundle') || (has(self.packageName) && size(self.packageName) > 0)",message="packageName is required unless spec.source.type is Bundle"
// +kubebuilder:validation:XValidation:rule="!has(self.source) || self.source.type != 'Bundle' || ((!has(self.version) || size(self.version) == 0) && (!has(self.channel) || size(self.channel) == 0) && (!has(self.channels) || size(self.channels) == 0))",message="version, channel and channels select bundles from catalogs and cannot be used with spec.source.type Bundle: the bundle is the one spec.source.bundle.source names; change that reference to install another version"
// +kubebuilder:validation:XValidation:rule="!has(self.source) || self.source.type != 'Bundle' || !has(self.catalogSelector)",message="catalogSelector cannot be used with spec.source.type Bundle: nothing is resolved from catalogs; remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.source) || self.source.type != 'Bundle' || ((!has(self.upgradePolicy) || self.upgradePolicy != 'Manual') && !has(self.approvedVersion) && (!has(self.upgradeConstraintPolicy) || self.upgradeConstraintPolicy != 'Ignore'))",message="upgradePolicy Manual, approvedVersion and upgradeConstraintPolicy Ignore apply to upgrades from catalogs and cannot be used with spec.source.type Bundle: upgrade by changing spec.source.bundle.source"
// +kubebuilder:validation:XValidation:rule="!has(self.source) || self.source.type != 'Bundle' || !has(self.upgradeScope) || self.upgradeScope != 'AnyVersion'",message="upgradeScope AnyVersion applies to upgrades from catalogs and cannot be used with spec.source.type Bundle: upgrade by changing spec.source.bundle.source"
// +kubebuilder:validation:XValidation:rule="!has(self.source) || self.source.type != 'Bundle' || !has(self.dependencyPolicy) || self.dependencyPolicy != 'Install'",message="dependencyPolicy Install cannot be used with spec.source.type Bundle: a direct bundle's dependencies are not resolved; create an Operator for each package it needs"
type OperatorSpec struct {
	// source says where the bundle comes from: the Catalogs (type Catalog, the default when source
	// is not set) or a bundle named directly (type Bundle: an image, git repository or URL, installed
	// without resolution). With type Bundle, version, channel, channels, catalogSelector,
	// upgradePolicy Manual, approvedVersion, upgradeConstraintPolicy Ignore, upgradeScope AnyVersion
	// and dependencyPolicy Install are refused: they only make sense for catalogs.
	// +optional
	Source *OperatorSource `json:"source,omitempty"`

	// packageName is the name of the package to install, as the catalogs name it (olm.package).
	// Required unless spec.source.type is Bundle; for a direct bundle it is optional and only names
	// the package (it is the default install namespace and the PACKAGE column).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="packageName must be lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	PackageName string `json:"packageName,omitempty"`

	// version is a semver range the installed bundle's version must satisfy, e.g. ">=1.2.0 <2.0.0",
	// ">=1.2.0, <2.0.0", "1.2.x", "~1.2", "^1", "1.2 - 1.4.5" or "1.2.0 || 1.4.x" (the syntax of
	// github.com/Masterminds/semver). An exact version such as "1.2.3" pins it.
	// When empty any version is acceptable for a first install, and an installed version upgrades by
	// itself only within its semver-compatible range (see upgradeScope); when set, it is honoured as
	// written, across major versions too.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[ ]*(=|!=|>=|<=|=>|=<|>|<|~>|[~^])?[ ]*v?(0|[1-9][0-9]*|[xX*])([.](0|[1-9][0-9]*|[xX*])){0,2}(-[0-9A-Za-z.-]+)?([+][0-9A-Za-z.-]+)?(([ ]*,[ ]*|[ ]*[|][|][ ]*|[ ]+-[ ]+|[ ]+)(=|!=|>=|<=|=>|=<|>|<|~>|[~^])?[ ]*v?(0|[1-9][0-9]*|[xX*])([.](0|[1-9][0-9]*|[xX*])){0,2}(-[0-9A-Za-z.-]+)?([+][0-9A-Za-z.-]+)?)*[ ]*$')",message="version must be a semver version or range such as 1.2.3, >=1.2.0 <2.0.0, 1.2.x, ~1.2, ^1 or 1.2.0 || 1.4.x"
	Version string `json:"version,omitempty"`

	// channel restricts resolution to the bundles of this channel of the package. When empty the
	// package's default channel is preferred, but any channel may be used.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9._]*[A-Za-z0-9])?$')",message="channel must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
	Channel string `json:"channel,omitempty"`

	// channels restricts resolution to the bundles of any of these channels of the package, and
	// upgrades to the edges of these channels; the highest version among them wins. Use it instead
	// of channel to follow several channels (e.g. stable and fast); setting both is refused.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9._]*[A-Za-z0-9])?$')",message="channels must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
	Channels []string `json:"channels,omitempty"`

	// catalogSelector restricts resolution to the Catalogs whose labels match. When empty every
	// Catalog is used. Keys and operators are checked when the Operator is written; a value that is
	// not a label value (at most 63 letters, digits, '-', '_' and '.') is reported by the Resolved
	// condition. (The rules cannot check values here: the CRD schema of a label selector sets no
	// size limits, so the API server refuses the cost of such rules.)
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, size(k) <= 317 && k.matches('^([a-z0-9.-]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$'))",message="catalogSelector.matchLabels keys must be label keys: an optional DNS subdomain prefix and '/', then letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, size(self.matchLabels[k]) <= 63)",message="catalogSelector.matchLabels values must be at most 63 characters"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, size(e.key) <= 317)",message="catalogSelector.matchExpressions keys must be at most 317 characters"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="catalogSelector.matchExpressions operators must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, (e.operator in ['In', 'NotIn']) == (has(e.values) && size(e.values) > 0))",message="catalogSelector.matchExpressions need values with In and NotIn, and none with Exists and DoesNotExist"
	CatalogSelector *metav1.LabelSelector `json:"catalogSelector,omitempty"`

	// upgradeConstraintPolicy says whether upgrades must follow the catalog's upgrade edges
	// (Enforce: replaces, skips, skipRange) or may go to any matching version, including a
	// downgrade (Ignore). Defaults to Enforce.
	// +optional
	// +kubebuilder:default=Enforce
	UpgradeConstraintPolicy UpgradeConstraintPolicy `json:"upgradeConstraintPolicy,omitempty"`

	// upgradePolicy says whether upgrades happen by themselves. Automatic (the default) installs the
	// best resolved bundle as soon as it is found. Manual installs the first resolved bundle, then
	// keeps the installed version: when a newer bundle is resolvable it sets the UpgradeAvailable
	// condition naming its version, and upgrades once spec.approvedVersion names that version.
	// +optional
	// +kubebuilder:default=Automatic
	UpgradePolicy UpgradePolicy `json:"upgradePolicy,omitempty"`

	// upgradeScope says how far upgrades go by themselves from the installed version (the semver
	// guard rails). SemverCompatible (the default) upgrades only within the installed version's
	// major version (in 0.x within its minor version; a 0.0.x version never upgrades by itself), as
	// upstream OLM v1 does: a newer version beyond that is reported by the UpgradeAvailable condition
	// (reason SemverGuardRail) with the version and why it waits, and is taken by setting
	// spec.version to a range that includes it (an explicit version or range is always honoured as
	// written, and replaces the guard rails) or, with upgradePolicy Manual, by approving it.
	// AnyVersion follows every upgrade the catalogs offer, across major versions too: every upgrade
	// edge under upgradeConstraintPolicy Enforce, any version under Ignore. It composes with
	// upgradePolicy: with Manual, AnyVersion offers the next major for approval like any upgrade.
	// A first install is not concerned: it takes the best version the spec allows.
	// +optional
	// +kubebuilder:default=SemverCompatible
	UpgradeScope UpgradeScope `json:"upgradeScope,omitempty"`

	// approvedVersion (upgradePolicy Manual only) is the exact bundle version that may be installed
	// next. To approve the version the UpgradeAvailable condition names, run
	// kubectl patch operator <name> --type=merge -p '{"spec":{"approvedVersion":"<version>"}}'
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^v?(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?([+][0-9A-Za-z.-]+)?$')",message="approvedVersion must be an exact semver version such as 1.2.3"
	ApprovedVersion string `json:"approvedVersion,omitempty"`

	// installNamespace is the namespace the operator is installed into. When empty it is the
	// namespace the bundle suggests (operatorframework.io/suggested-namespace), else packageName
	// (for a direct bundle, spec.source.type Bundle: packageName, else the Operator's name).
	// The namespace is created when missing, and deleted with the Operator only if it was created
	// for it. Once set it cannot be changed.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="installNamespace is immutable; delete and recreate the Operator to move it"
	InstallNamespace string `json:"installNamespace,omitempty"`

	// watchNamespaces lists the namespaces the operator watches (its install mode): the install
	// namespace alone for OwnNamespace, other namespaces for Single/MultiNamespace. When empty, all
	// namespaces if the bundle supports it, else its install namespace (OwnNamespace). It is passed
	// to the BundleDeployment's config.watchNamespaces.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	WatchNamespaces []string `json:"watchNamespaces,omitempty"`

	// config is passed as is to the BundleDeployment that installs the bundle
	// (e.g. deploymentConfig to set env, resources, nodeSelector, tolerations or affinity).
	// +optional
	Config *rukpakv1alpha1.BundleConfig `json:"config,omitempty"`

	// collisionPolicy is passed to the BundleDeployment: what to do when an object of the bundle
	// already exists and OLM did not install it for this Operator. Prevent (the default) leaves it
	// alone and reports Installed=False with reason ObjectConflict naming the object and its owner;
	// IfNoController adopts objects without a controller owner that no other BundleDeployment owns
	// (moving an operator installed by other means to OLM); None takes over anything (dangerous).
	// +optional
	// +kubebuilder:default=Prevent
	CollisionPolicy rukpakv1alpha1.CollisionPolicy `json:"collisionPolicy,omitempty"`

	// deletionPolicy is passed to the BundleDeployment: what deleting this Operator does to what it
	// installed. Delete (the default) deletes every object OLM installed for it (CRDs are kept) and
	// the install namespace if it was created for the Operator; Orphan leaves every object, and the
	// namespace, in place and only removes OLM's ownership marks.
	// +optional
	// +kubebuilder:default=Delete
	DeletionPolicy rukpakv1alpha1.DeletionPolicy `json:"deletionPolicy,omitempty"`

	// dependencyPolicy says who provides the packages the chosen bundle depends on
	// (olm.package.required, olm.gvk.required, olm.constraint). Require (the default) uses only
	// packages that other Operators install: the Resolved condition names every missing package and
	// the Operator to create. Install creates an Operator for each needed package, named after the
	// package (also for the dependencies of those), labelled operators.operatorframework.io/dependency
	// and owned by every Operator that needs it, so it is deleted when the last of them is gone or no
	// longer needs it. An Operator that already installs the package (one you created) is used instead
	// and never changed or deleted by this. status.dependencies lists what was pulled in and why.
	// +optional
	// +kubebuilder:default=Require
	DependencyPolicy DependencyPolicy `json:"dependencyPolicy,omitempty"`

	// paused stops changing what this Operator installed while true: it stays on its installed
	// bundle whatever the catalogs or the spec say, and its BundleDeployment is paused too (nothing
	// is unpacked, applied or pruned; drift is not reverted). The Paused condition says since when.
	// Setting it back to false resumes: resolution and installation run as usual. Deleting a paused
	// Operator still uninstalls it.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// progressDeadline is passed to the BundleDeployment: how long an install or upgrade may take
	// to become Healthy, e.g. "10m". Past it Healthy=False with reason ProgressDeadlineExceeded, and
	// upgradeFailurePolicy decides what follows.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="progressDeadline must be a duration of at least 1s, e.g. 10m"
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`

	// upgradeFailurePolicy is passed to the BundleDeployment: Hold (the default) only reports an
	// install or upgrade that exceeded progressDeadline; Rollback re-applies the last revision that
	// was Healthy (unless its CustomResourceDefinitions cannot go back: reason RollbackBlocked).
	// Rollback needs progressDeadline.
	// +optional
	// +kubebuilder:validation:Enum=Hold;Rollback
	UpgradeFailurePolicy rukpakv1alpha1.UpgradeFailurePolicy `json:"upgradeFailurePolicy,omitempty"`

	// progressionProbes are passed to the BundleDeployment: readiness checks of the installed
	// objects a probe selects (by group/kind or labels), each a list of assertions (a status
	// condition, a field value, two equal fields or a CEL expression over self). Healthy waits until
	// they pass and, while one waits, names the probe, the object and the value it observed.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	ProgressionProbes []rukpakv1alpha1.ProgressionProbe `json:"progressionProbes,omitempty"`
}

// BundleMetadata identifies a bundle of a catalog.
type BundleMetadata struct {
	// name of the bundle (olm.bundle name), e.g. "argocd-operator.v0.6.0".
	// +required
	Name string `json:"name"`

	// version of the bundle (its olm.package property).
	// +required
	Version string `json:"version"`

	// catalog is the name of the Catalog the bundle was resolved from.
	// +optional
	Catalog string `json:"catalog,omitempty"`

	// source is where the bundle's content is pulled from: its image reference.
	// +optional
	Source string `json:"source,omitempty"`

	// properties are the bundle's properties as its catalog lists them (olm.package, olm.gvk,
	// olm.package.required, olm.constraint, olm.maxOpenShiftVersion, the author's own types ...),
	// without those that carry whole manifests or descriptions (olm.bundle.object,
	// olm.csv.metadata). The BundleDeployment that installs the bundle carries the same list in its
	// annotation operators.operatorframework.io/bundle-properties.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Properties []BundleProperty `json:"properties,omitempty"`
}

// BundleProperty is one property of a bundle.
type BundleProperty struct {
	// type of the property, e.g. "olm.gvk".
	// +required
	// +kubebuilder:validation:MaxLength=253
	Type string `json:"type"`

	// value of the property as compact JSON, e.g. {"group":"example.com","kind":"Widget","version":"v1"}.
	// +required
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value"`
}

// Dependency is a package installed to satisfy a dependency of the Operator's bundle.
type Dependency struct {
	// package is the package that provides the dependency.
	// +required
	Package string `json:"package"`

	// version is the version of the package's bundle chosen by resolution.
	// +required
	Version string `json:"version"`

	// operator is the Operator that installs the package: one created for this dependency
	// (labelled operators.operatorframework.io/dependency) or one that already installed it.
	// +required
	Operator string `json:"operator"`

	// requiredBy is the requirement of the Operator's bundle that pulled the package in, e.g.
	// "olm.gvk.required kubevirt.io/v1 KubeVirt" or "olm.package.required cdi-operator >=1.50.0".
	// +required
	RequiredBy string `json:"requiredBy"`
}

// OperatorStatus is what operator-controller resolved and installed.
type OperatorStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Resolved, Installed, Healthy, Deprecated and UpgradeAvailable.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// resolvedBundle is the bundle the last successful resolution chose.
	// +optional
	ResolvedBundle *BundleMetadata `json:"resolvedBundle,omitempty"`

	// installedBundle is the bundle that is installed.
	// +optional
	InstalledBundle *BundleMetadata `json:"installedBundle,omitempty"`

	// installNamespace is the namespace the operator is installed into (spec.installNamespace or
	// the default chosen for it).
	// +optional
	InstallNamespace string `json:"installNamespace,omitempty"`

	// dependencies are the packages installed to satisfy the dependencies of the resolved bundle
	// (dependencyPolicy Install), with the Operator that installs each and why it is needed.
	// +optional
	// +listType=map
	// +listMapKey=package
	Dependencies []Dependency `json:"dependencies,omitempty"`

	// declaredDependencies are the dependencies the installed direct bundle (spec.source.type
	// Bundle, format RegistryV1) declares in its content: olm.package.required and olm.gvk.required
	// (metadata/properties.yaml, metadata/dependencies.yaml, and the CSV's required
	// CustomResourceDefinitions). They are reported, never resolved or installed: each says whether
	// the cluster has it (status Present, Missing or Unknown). The Resolved condition names the
	// missing ones. Empty for Operators installed from catalogs (see dependencies).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	DeclaredDependencies []DeclaredDependency `json:"declaredDependencies,omitempty"`
}

// DependencyPresence says whether the cluster has a declared dependency.
// +kubebuilder:validation:Enum=Present;Missing;Unknown
type DependencyPresence string

// The presences of a declared dependency.
const (
	// DependencyPresent: an Operator installs the package at a version in the range, or the API
	// server serves the group, version and kind.
	DependencyPresent DependencyPresence = "Present"
	// DependencyMissing: nothing on the cluster provides it.
	DependencyMissing DependencyPresence = "Missing"
	// DependencyUnknown: it could not be checked (the message says why).
	DependencyUnknown DependencyPresence = "Unknown"
)

// DeclaredDependency is one dependency a direct bundle declares.
type DeclaredDependency struct {
	// type of the property that declares it: olm.package.required or olm.gvk.required.
	// +required
	Type string `json:"type"`

	// value names what is required: "<package> <version range>" for olm.package.required, or
	// "<group>/<version> <Kind>" for olm.gvk.required.
	// +required
	Value string `json:"value"`

	// status says whether the cluster has it: Present, Missing or Unknown.
	// +required
	Status DependencyPresence `json:"status"`

	// message says what was found, e.g. "no Operator installs package etcd" or "served by the API
	// server".
	// +optional
	Message string `json:"message,omitempty"`
}

// Operator asks operator-controller to install a package from the Catalogs: it resolves a bundle
// that satisfies the spec (together with every other Operator), installs it through a
// BundleDeployment, and upgrades it as the spec and catalogs allow. Deleting it uninstalls it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=olm
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Package",type=string,JSONPath=`.spec.packageName`
// +kubebuilder:printcolumn:name="Installed",type=string,JSONPath=`.status.installedBundle.version`,description="Version of the installed bundle"
// +kubebuilder:printcolumn:name="Resolved",type=string,JSONPath=`.status.resolvedBundle.version`,description="Version of the resolved bundle"
// +kubebuilder:printcolumn:name="Install Status",type=string,JSONPath=`.status.conditions[?(@.type=="Installed")].status`,description="Status of the Installed condition"
// +kubebuilder:printcolumn:name="Healthy",type=string,JSONPath=`.status.conditions[?(@.type=="Healthy")].status`
// +kubebuilder:printcolumn:name="Upgrade Available",type=string,JSONPath=`.status.conditions[?(@.type=="UpgradeAvailable")].status`,priority=1
// +kubebuilder:printcolumn:name="Channel",type=string,JSONPath=`.spec.channel`,priority=1
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.status.installNamespace`,priority=1
// +kubebuilder:printcolumn:name="Paused",type=string,JSONPath=`.status.conditions[?(@.type=="Paused")].status`,priority=1
// +kubebuilder:printcolumn:name="Missing Dependencies",type=string,JSONPath=`.status.declaredDependencies[?(@.status=="Missing")].value`,priority=1,description="Dependencies a direct bundle declares that the cluster lacks (never installed for it)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name must be at most 63 characters: it names the Operator's BundleDeployment and labels what it installs"
type Operator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which package to install and how to upgrade it.
	// +required
	Spec OperatorSpec `json:"spec"`

	// status is what operator-controller resolved and installed.
	// +optional
	Status OperatorStatus `json:"status,omitempty"`
}

// OperatorList is a list of Operators.
//
// +kubebuilder:object:root=true
type OperatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the Operators.
	Items []Operator `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Operator{}, &OperatorList{})
}
