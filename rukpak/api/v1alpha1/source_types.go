package v1alpha1

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SourceType names where content is fetched from. It is the discriminator of the Source union.
// +kubebuilder:validation:Enum=Image;ConfigMaps;HTTP;Git
type SourceType string

const (
	// SourceTypeImage fetches content from an OCI image in a container registry.
	SourceTypeImage SourceType = "Image"
	// SourceTypeConfigMaps reads content from one or more ConfigMaps.
	SourceTypeConfigMaps SourceType = "ConfigMaps"
	// SourceTypeHTTP downloads content from an http(s) URL.
	SourceTypeHTTP SourceType = "HTTP"
	// SourceTypeGit clones content from a git repository.
	SourceTypeGit SourceType = "Git"
)

// Source says where content (a bundle for a BundleDeployment, a file-based catalog for a Catalog) is
// fetched from. It is a union: set type, and set exactly the one member that type names.
//
// Secrets and ConfigMaps named in a Source are read from the namespace the controller runs in
// (catalogd's namespace for a Catalog, rukpak's namespace for a BundleDeployment).
//
// +kubebuilder:validation:XValidation:rule="self.type != 'Image' || has(self.image)",message="image is required when type is Image"
// +kubebuilder:validation:XValidation:rule="self.type == 'Image' || !has(self.image)",message="image must not be set unless type is Image"
// +kubebuilder:validation:XValidation:rule="self.type != 'ConfigMaps' || has(self.configMaps)",message="configMaps is required when type is ConfigMaps"
// +kubebuilder:validation:XValidation:rule="self.type == 'ConfigMaps' || !has(self.configMaps)",message="configMaps must not be set unless type is ConfigMaps"
// +kubebuilder:validation:XValidation:rule="self.type != 'HTTP' || has(self.http)",message="http is required when type is HTTP"
// +kubebuilder:validation:XValidation:rule="self.type == 'HTTP' || !has(self.http)",message="http must not be set unless type is HTTP"
// +kubebuilder:validation:XValidation:rule="self.type != 'Git' || has(self.git)",message="git is required when type is Git"
// +kubebuilder:validation:XValidation:rule="self.type == 'Git' || !has(self.git)",message="git must not be set unless type is Git"
type Source struct {
	// type selects the member of this union that holds the source's details:
	// Image (an OCI image), ConfigMaps (ConfigMaps in the controller's namespace),
	// HTTP (a file or .tar.gz archive at a URL) or Git (a directory of a git repository).
	// +required
	// +unionDiscriminator
	Type SourceType `json:"type"`

	// image fetches content from an OCI image. Required when type is Image, forbidden otherwise.
	// +optional
	// +unionMember
	Image *ImageSource `json:"image,omitempty"`

	// configMaps reads content from ConfigMaps: each entry writes the data keys of one ConfigMap as
	// files under its path. Required when type is ConfigMaps, forbidden otherwise.
	// +optional
	// +unionMember
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	ConfigMaps []ConfigMapSource `json:"configMaps,omitempty"`

	// http downloads content from an http(s) URL. Required when type is HTTP, forbidden otherwise.
	// +optional
	// +unionMember
	HTTP *HTTPSource `json:"http,omitempty"`

	// git clones content from a git repository. Required when type is Git, forbidden otherwise.
	// +optional
	// +unionMember
	Git *GitSource `json:"git,omitempty"`
}

// PollInterval is how often the source is fetched again to look for new content: the pollInterval
// of the member that is set (image, http or git), or 0 when it has none or the member cannot poll
// (configMaps). Controllers requeue after it when it is positive.
func (s Source) PollInterval() time.Duration {
	var pi *metav1.Duration
	switch {
	case s.Image != nil:
		pi = s.Image.PollInterval
	case s.HTTP != nil:
		pi = s.HTTP.PollInterval
	case s.Git != nil:
		pi = s.Git.PollInterval
	}
	if pi == nil {
		return 0
	}
	return pi.Duration
}

// ImageSource fetches content from the filesystem of an OCI image.
//
// +kubebuilder:validation:XValidation:rule="!has(self.pollInterval) || !self.ref.contains('@')",message="pollInterval must not be set when ref is a digest reference (contains '@sha256:'): the content behind a digest never changes"
type ImageSource struct {
	// ref is the image reference, either by tag (quay.io/org/catalog:latest) or by digest
	// (quay.io/org/catalog@sha256:<64 hex digits>).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1000
	Ref string `json:"ref"`

	// pullSecret is the name of a Secret of type kubernetes.io/dockerconfigjson, in the controller's
	// namespace, holding the credentials used to pull the image. Anonymous pulls are used when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	PullSecret string `json:"pullSecret,omitempty"`

	// insecureSkipTLSVerify skips verification of the registry's TLS certificate.
	// Only use it for registries you reach over a trusted network.
	// +optional
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`

	// pollInterval is how often the tag in ref is resolved again to look for new content, e.g. "10m".
	// When empty the tag is only resolved when the object changes. It cannot be set when ref is a
	// digest reference.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="pollInterval must be a positive duration such as 30s or 10m"
	PollInterval *metav1.Duration `json:"pollInterval,omitempty"`

	// verify, when set, requires the image to carry a valid signature under this policy before
	// any of its content is unpacked. The signature is checked on the digest the reference
	// resolved to, and exactly that digest is then unpacked. An image without a signature fails
	// with reason Unsigned; a signature that does not verify with any of the policy's keys, or that
	// names another digest, fails with reason SignatureInvalid. When empty no signature is checked.
	// +optional
	Verify *ImageVerification `json:"verify,omitempty"`
}

// ConfigMapSource writes the data keys of one ConfigMap as files under a directory.
type ConfigMapSource struct {
	// configMap names the ConfigMap, in the controller's namespace, whose data and binaryData keys
	// become files (one file per key, named after the key).
	// +required
	ConfigMap ConfigMapReference `json:"configMap"`

	// path is the directory, relative to the root of the content, under which the ConfigMap's keys
	// are written, e.g. "configs" or "manifests". When empty the keys are written at the root.
	// It must be relative and must not contain ".." elements.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="path must be relative (must not start with '/')"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.](/|$)')",message="path must not contain '..' elements"
	Path string `json:"path,omitempty"`
}

// ConfigMapReference names a ConfigMap in the controller's namespace.
type ConfigMapReference struct {
	// name of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// HTTPSource downloads content from an http(s) URL: either a .tar.gz (or .tgz) archive, which is
// extracted, or a single file, which is stored as is under its base name.
type HTTPSource struct {
	// url is the absolute http:// or https:// URL of the archive or file.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="url must be an absolute http:// or https:// URL"
	URL string `json:"url"`

	// caSecret is the name of a Secret, in the controller's namespace, whose "ca.crt" key holds the
	// PEM-encoded CA certificates used to verify the server. The system roots are used when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	CASecret string `json:"caSecret,omitempty"`

	// insecureSkipTLSVerify skips verification of the server's TLS certificate.
	// Only use it for servers you reach over a trusted network.
	// +optional
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`

	// allowRedirectsToOtherHosts lets the download follow redirects to other hosts. By default a
	// redirect is followed only when it stays on the scheme, host and port of url, and a redirect
	// anywhere else fails, naming both URLs. Set it for servers that hand downloads over to another
	// host, such as GitHub release assets (redirected to objects.githubusercontent.com).
	// The other hosts are reached like url itself: without credentials, and with the TLS settings of
	// this source (caSecret and insecureSkipTLSVerify apply to them too). Whatever this says, at most
	// 5 redirects are followed in a row, and a redirect from https to plain http is never followed.
	// +optional
	AllowRedirectsToOtherHosts bool `json:"allowRedirectsToOtherHosts,omitempty"`

	// pollInterval is how often the URL is fetched again (with If-None-Match / If-Modified-Since) to
	// look for new content, e.g. "10m". When empty it is only fetched when the object changes.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="pollInterval must be a positive duration such as 30s or 10m"
	PollInterval *metav1.Duration `json:"pollInterval,omitempty"`
}

// GitSource clones a directory of a git repository at a branch, tag or commit.
//
// +kubebuilder:validation:XValidation:rule="!has(self.pollInterval) || !has(self.ref.commit)",message="pollInterval must not be set when ref.commit is set: a commit never changes"
type GitSource struct {
	// repository is the URL of the repository: https://, http://, ssh://, git:// or file:// URLs,
	// or an scp-like address such as git@github.com:org/repo.git.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^(https?|ssh|git|file)://.+') || self.matches('^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:.+$')",message="repository must be an https://, http://, ssh://, git:// or file:// URL, or an scp-like address such as git@github.com:org/repo.git"
	Repository string `json:"repository"`

	// ref selects what to check out: exactly one of branch, tag or commit.
	// +required
	Ref GitRef `json:"ref"`

	// directory is the directory of the repository, relative to its root, that holds the content.
	// When empty the whole repository is used. It must be relative and must not contain ".." elements.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="directory must be relative (must not start with '/')"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.](/|$)')",message="directory must not contain '..' elements"
	Directory string `json:"directory,omitempty"`

	// authSecret is the name of a Secret, in the controller's namespace, holding credentials for the
	// repository: "username" and "password" (or a token as password) for http(s), or
	// "ssh-privatekey" and "known_hosts" (required: host keys are never trusted on first use) for ssh. Anonymous access is used when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	AuthSecret string `json:"authSecret,omitempty"`

	// pollInterval is how often the branch or tag is resolved again to look for new commits,
	// e.g. "5m". When empty it is only resolved when the object changes. It cannot be set together
	// with ref.commit.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="pollInterval must be a positive duration such as 30s or 10m"
	PollInterval *metav1.Duration `json:"pollInterval,omitempty"`
}

// GitRef selects a branch, a tag or a commit: exactly one of them.
//
// +kubebuilder:validation:XValidation:rule="[has(self.branch), has(self.tag), has(self.commit)].filter(x, x).size() == 1",message="exactly one of branch, tag or commit must be set"
type GitRef struct {
	// branch checks out the head of this branch, e.g. "main".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Branch string `json:"branch,omitempty"`

	// tag checks out this tag, e.g. "v1.2.0".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Tag string `json:"tag,omitempty"`

	// commit checks out this commit: a full 40-character SHA-1 or 64-character SHA-256 id in
	// lowercase hexadecimal.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-f]{40}([0-9a-f]{24})?$')",message="commit must be a full 40-character (SHA-1) or 64-character (SHA-256) lowercase hexadecimal commit id"
	Commit string `json:"commit,omitempty"`
}

// ResolvedSource records exactly which content a Source resolved to when it was last unpacked:
// the member matching type is set.
type ResolvedSource struct {
	// type is the type of the Source this was resolved from.
	// +required
	Type SourceType `json:"type"`

	// image is set when type is Image.
	// +optional
	Image *ResolvedImageSource `json:"image,omitempty"`

	// configMaps is set when type is ConfigMaps: one entry per ConfigMap, in spec order.
	// +optional
	// +listType=atomic
	ConfigMaps []ResolvedConfigMapSource `json:"configMaps,omitempty"`

	// http is set when type is HTTP.
	// +optional
	HTTP *ResolvedHTTPSource `json:"http,omitempty"`

	// git is set when type is Git.
	// +optional
	Git *ResolvedGitSource `json:"git,omitempty"`
}

// String names the content for condition messages and logs, the same way in catalogd and rukpak:
// "image <ref@digest>" (followed by " (pulled from mirror <mirror>)" when a mirror served it), "git <repository> at <commit>", "http <url>" (followed by " etag <etag>"
// when the server sent one) or "configmaps <name>@<resourceVersion>, ...". It is "unknown source"
// for nil, and the type alone when the member of that type is missing.
func (rs *ResolvedSource) String() string {
	if rs == nil {
		return "unknown source"
	}
	switch {
	case rs.Image != nil && rs.Image.Mirror != "":
		return "image " + rs.Image.Ref + " (pulled from mirror " + rs.Image.Mirror + ")"
	case rs.Image != nil:
		return "image " + rs.Image.Ref
	case rs.Git != nil:
		return fmt.Sprintf("git %s at %s", rs.Git.Repository, rs.Git.Commit)
	case rs.HTTP != nil:
		s := "http " + rs.HTTP.URL
		if rs.HTTP.ETag != "" {
			s += " etag " + rs.HTTP.ETag
		}
		return s
	case len(rs.ConfigMaps) > 0:
		cms := make([]string, 0, len(rs.ConfigMaps))
		for _, cm := range rs.ConfigMaps {
			cms = append(cms, cm.Name+"@"+cm.ResourceVersion)
		}
		return "configmaps " + strings.Join(cms, ", ")
	}
	return string(rs.Type)
}

// ResolvedImageSource is the image an ImageSource resolved to.
type ResolvedImageSource struct {
	// ref is the digest reference of the image that was unpacked,
	// e.g. quay.io/org/catalog@sha256:<64 hex digits>.
	// +required
	Ref string `json:"ref"`

	// requested is the reference as spec.source.image.ref named it (a tag, or the digest itself):
	// the name a catalog gives the image. Unset in statuses written before it existed.
	// +optional
	Requested string `json:"requested,omitempty"`

	// mirror is the digest reference the image was actually pulled from, when that is not the
	// repository of ref: a mirror from the registry mirror configuration (the controller's
	// registries.conf, ImageDigestMirrorSets, ImageTagMirrorSets), or the location a
	// registries.conf entry remaps the registry to, e.g. mirror.example.com/org/catalog@sha256:<digest>.
	// ref still names the image by its original repository. Empty when the image came from the
	// registry ref names.
	// +optional
	// +kubebuilder:validation:MaxLength=1000
	Mirror string `json:"mirror,omitempty"`

	// verified records the signature that was verified before ref was unpacked, when
	// spec.source.image.verify is set. Unset when no signature was required.
	// +optional
	Verified *VerifiedSignature `json:"verified,omitempty"`
}

// ResolvedConfigMapSource is the version of one ConfigMap that was read.
type ResolvedConfigMapSource struct {
	// name of the ConfigMap.
	// +required
	Name string `json:"name"`

	// resourceVersion of the ConfigMap when it was read.
	// +required
	ResourceVersion string `json:"resourceVersion"`
}

// ResolvedHTTPSource is the response an HTTPSource resolved to.
type ResolvedHTTPSource struct {
	// url that was fetched (after redirects).
	// +required
	URL string `json:"url"`

	// etag is the ETag header of the response, if the server sent one.
	// +optional
	ETag string `json:"etag,omitempty"`

	// lastModified is the Last-Modified header of the response, if the server sent one.
	// +optional
	LastModified string `json:"lastModified,omitempty"`
}

// ResolvedGitSource is the commit a GitSource resolved to.
type ResolvedGitSource struct {
	// repository that was cloned.
	// +required
	Repository string `json:"repository"`

	// commit id that was checked out.
	// +required
	Commit string `json:"commit"`
}
