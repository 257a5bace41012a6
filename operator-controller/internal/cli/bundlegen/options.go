package bundlegen

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Options are what the bundle says about itself beyond its manifests (the flags of
// `kubectl olmv1 bundle generate`).
type Options struct {
	// Package is the package name (operators.operatorframework.io.bundle.package.v1). Required.
	Package string
	// Version is the bundle's semantic version (spec.version; the CSV is named <package>.v<version>).
	Version string
	// Channels are the channels the bundle is in (at least one), DefaultChannel the package's default
	// (one of Channels; with a single channel, that one).
	Channels       []string
	DefaultChannel string
	// Icon is the content of the icon file; its media type is detected from the content.
	Icon []byte
	// InstallModes are the supported install modes; empty means AllNamespaces and OwnNamespace.
	InstallModes []string
	// MinKubeVersion is spec.minKubeVersion, e.g. 1.27.0.
	MinKubeVersion string
	// RequiresGVK are group/version/Kind APIs the operator needs another bundle to provide.
	RequiresGVK []string
	// RequiresPackage are name:range packages the operator needs installed, e.g. etcd:>=0.9.0 <1.0.0.
	RequiresPackage []string
}

// DefaultInstallModes are the install modes a bundle supports unless told otherwise.
var DefaultInstallModes = []string{string(operatorsv1alpha1.InstallModeTypeAllNamespaces), string(operatorsv1alpha1.InstallModeTypeOwnNamespace)}

var allInstallModes = []operatorsv1alpha1.InstallModeType{
	operatorsv1alpha1.InstallModeTypeOwnNamespace, operatorsv1alpha1.InstallModeTypeSingleNamespace,
	operatorsv1alpha1.InstallModeTypeMultiNamespace, operatorsv1alpha1.InstallModeTypeAllNamespaces,
}

// settings are Options checked and parsed.
type settings struct {
	Options
	version      string
	installModes []operatorsv1alpha1.InstallMode
	gvks         []schema.GroupVersionKind
	packages     []requiredPackage
}

type requiredPackage struct{ Name, Range string }

func (o Options) parse() (*settings, error) {
	s := &settings{Options: o}
	if o.Package == "" {
		return nil, fmt.Errorf("--package is required: the name of the package the bundle belongs to, e.g. my-operator")
	}
	if errs := validation.IsDNS1123Label(o.Package); len(errs) > 0 {
		return nil, fmt.Errorf("--package %q is not a valid package name (%s): use lower-case letters, digits and '-'", o.Package, strings.Join(errs, "; "))
	}
	v, err := semver.StrictNewVersion(strings.TrimPrefix(o.Version, "v"))
	if err != nil {
		return nil, fmt.Errorf("--version %q is not a semantic version (e.g. 1.2.0)", o.Version)
	}
	s.version = v.String()
	if len(o.Channels) == 0 {
		return nil, fmt.Errorf("--channels is required: the comma-separated channels the bundle is in, e.g. stable")
	}
	for _, c := range o.Channels {
		if c == "" || strings.ContainsAny(c, ", ") {
			return nil, fmt.Errorf("--channels: %q is not a channel name", c)
		}
	}
	switch {
	case o.DefaultChannel == "" && len(o.Channels) == 1:
		s.DefaultChannel = o.Channels[0]
	case o.DefaultChannel != "" && !contains(o.Channels, o.DefaultChannel):
		return nil, fmt.Errorf("--default-channel %q is not one of --channels %s", o.DefaultChannel, strings.Join(o.Channels, ","))
	}
	if s.installModes, err = parseInstallModes(o.InstallModes); err != nil {
		return nil, err
	}
	if o.MinKubeVersion != "" {
		if _, err := semver.StrictNewVersion(strings.TrimPrefix(o.MinKubeVersion, "v")); err != nil {
			return nil, fmt.Errorf("--min-kube-version %q is not a version like 1.27.0", o.MinKubeVersion)
		}
	}
	for _, g := range o.RequiresGVK {
		gvk, err := parseGVK(g)
		if err != nil {
			return nil, err
		}
		s.gvks = append(s.gvks, gvk)
	}
	for _, p := range o.RequiresPackage {
		name, rng, ok := strings.Cut(p, ":")
		if !ok || name == "" || strings.TrimSpace(rng) == "" {
			return nil, fmt.Errorf("--requires-package %q: write name:range, e.g. etcd:>=0.9.0 <1.0.0", p)
		}
		if _, err := semver.NewConstraint(rng); err != nil {
			return nil, fmt.Errorf("--requires-package %q: %q is not a version range: %v", p, rng, err)
		}
		s.packages = append(s.packages, requiredPackage{Name: name, Range: strings.TrimSpace(rng)})
	}
	return s, nil
}

func parseInstallModes(names []string) ([]operatorsv1alpha1.InstallMode, error) {
	if len(names) == 0 {
		names = DefaultInstallModes
	}
	want := map[operatorsv1alpha1.InstallModeType]bool{}
	for _, n := range names {
		ok := false
		for _, m := range allInstallModes {
			if strings.EqualFold(n, string(m)) {
				want[m], ok = true, true
			}
		}
		if !ok {
			return nil, fmt.Errorf("--install-modes: %q is not an install mode; use AllNamespaces, OwnNamespace, SingleNamespace or MultiNamespace", n)
		}
	}
	out := make([]operatorsv1alpha1.InstallMode, 0, len(allInstallModes))
	for _, m := range allInstallModes {
		out = append(out, operatorsv1alpha1.InstallMode{Type: m, Supported: want[m]})
	}
	return out, nil
}

// parseGVK parses group/version/Kind; the core group is written as /v1/Kind or v1/Kind.
func parseGVK(s string) (schema.GroupVersionKind, error) {
	parts := strings.Split(s, "/")
	if len(parts) == 2 {
		parts = append([]string{""}, parts...)
	}
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("--requires-gvk %q: write group/version/Kind, e.g. cert-manager.io/v1/Certificate", s)
	}
	return schema.GroupVersionKind{Group: parts[0], Version: parts[1], Kind: parts[2]}, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
