package fbcedit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// DeprecateOptions says what to deprecate: the package (neither Channel nor Bundle), one of its
// channels, or one of its bundles (a version or a bundle name).
type DeprecateOptions struct {
	Channel string
	Bundle  string
	// Message tells users what to do instead; it is shown on the Operators that install the entry.
	Message string
}

// DeprecateResult describes what Deprecate did.
type DeprecateResult struct {
	Package   string                         `json:"package"`
	Reference declcfg.PackageScopedReference `json:"reference"`
	// Action is "added" (a new entry), "updated" (the entry's message changed) or "unchanged".
	Action string `json:"action"`
	// BlobCreated is true when the package had no olm.deprecations blob before.
	BlobCreated bool `json:"blobCreated,omitempty"`
}

// Deprecate writes an entry of the olm.deprecations blob of package pkg (created when missing): a
// reference to the package, a channel or a bundle, with a message. An entry for the same reference
// has its message replaced. Unknown channels and bundles are refused.
func Deprecate(cfg *declcfg.DeclarativeConfig, pkg string, opts DeprecateOptions) (*DeprecateResult, error) {
	if strings.TrimSpace(opts.Message) == "" {
		return nil, fmt.Errorf("a deprecation needs a message telling users what to do instead (pass --message)")
	}
	if opts.Channel != "" && opts.Bundle != "" {
		return nil, fmt.Errorf("deprecate a channel or a bundle, not both (--channel %s, --bundle %s)", opts.Channel, opts.Bundle)
	}
	if !slices.ContainsFunc(cfg.Packages, func(p declcfg.Package) bool { return p.Name == pkg }) {
		return nil, fmt.Errorf("package %s is not in the catalog (no olm.package blob; create it with `kubectl olmv1 catalog init`)", pkg)
	}
	ref, err := deprecationRef(cfg, pkg, opts)
	if err != nil {
		return nil, err
	}
	res := &DeprecateResult{Package: pkg, Reference: ref}

	var idx = -1
	for i, d := range cfg.Deprecations {
		if d.Package != pkg {
			continue
		}
		if idx >= 0 {
			return nil, fmt.Errorf("package %s has more than one olm.deprecations blob; a package has at most one (merge their entries)", pkg)
		}
		idx = i
	}
	if idx < 0 {
		cfg.Deprecations = append(cfg.Deprecations, declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: pkg})
		idx = len(cfg.Deprecations) - 1
		res.BlobCreated = true
	}
	d := &cfg.Deprecations[idx]
	for i := range d.Entries {
		e := &d.Entries[i]
		if e.Reference.Schema != ref.Schema || e.Reference.Name != ref.Name {
			continue
		}
		if e.Message == opts.Message {
			res.Action = "unchanged"
			return res, nil
		}
		e.Message = opts.Message
		res.Action = "updated"
		return res, nil
	}
	d.Entries = append(d.Entries, declcfg.DeprecationEntry{Reference: ref, Message: opts.Message})
	res.Action = "added"
	return res, nil
}

// deprecationRef is the reference opts names in package pkg, checked against cfg.
func deprecationRef(cfg *declcfg.DeclarativeConfig, pkg string, opts DeprecateOptions) (declcfg.PackageScopedReference, error) {
	switch {
	case opts.Channel != "":
		var names []string
		for _, c := range cfg.Channels {
			if c.Package != pkg {
				continue
			}
			if c.Name == opts.Channel {
				return declcfg.PackageScopedReference{Schema: declcfg.SchemaChannel, Name: c.Name}, nil
			}
			names = append(names, c.Name)
		}
		slices.Sort(names)
		return declcfg.PackageScopedReference{}, fmt.Errorf("package %s has no channel %s (its channels: %s)", pkg, opts.Channel, strings.Join(names, ", "))
	case opts.Bundle != "":
		b, _, err := FindBundle(cfg, pkg, opts.Bundle)
		if err != nil {
			return declcfg.PackageScopedReference{}, err
		}
		return declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: b.Name}, nil
	}
	return declcfg.PackageScopedReference{Schema: declcfg.SchemaPackage}, nil
}
