package mirrors

import (
	"fmt"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// PullFrom says which references a mirror serves (registries.conf pull-from-mirror).
type PullFrom string

const (
	// PullFromAll: digest and tag references (the default).
	PullFromAll PullFrom = "all"
	// PullFromDigestOnly: digest references only; the content behind a digest is the same on every
	// mirror, so an out-of-date mirror cannot serve something else.
	PullFromDigestOnly PullFrom = "digest-only"
	// PullFromTagOnly: tag references only.
	PullFromTagOnly PullFrom = "tag-only"
)

// serves reports whether a mirror with this setting is used for a digest (or tag) reference.
func (p PullFrom) serves(digest bool) bool {
	switch p {
	case PullFromDigestOnly:
		return digest
	case PullFromTagOnly:
		return !digest
	}
	return true
}

// Mirror is one mirror of a Registry.
type Mirror struct {
	// Location is host[:port][/path]: the part of a reference matched by the registry's prefix is
	// replaced by it.
	Location string
	// Insecure allows plain HTTP and TLS certificates that do not verify.
	Insecure bool
	// PullFrom says which references the mirror serves; never empty.
	PullFrom PullFrom
	// Origin names what configured the mirror, for messages: a file path, or
	// `ImageDigestMirrorSet "name"`.
	Origin string
}

// Registry is one [[registry]] table, or one source of the mirror sets.
type Registry struct {
	// Prefix selects the references this entry applies to: host[:port][/path] (a reference matches
	// when its repository is the prefix or starts with the prefix and "/"), or *.domain for every
	// host under domain (not domain itself, nor a host with a port).
	Prefix string
	// Location replaces Prefix in the reference pulled from the source; equal to Prefix unless the
	// table remaps it, and empty for a wildcard prefix (the reference's own host is used).
	Location string
	// Insecure allows plain HTTP and unverified TLS for the source location.
	Insecure bool
	// Blocked forbids contacting the source location; mirrors may still be used.
	Blocked bool
	// BlockedBy names what blocked the source (a file, `ImageDigestMirrorSet "name"`), when
	// Blocked.
	BlockedBy string
	// Mirrors are tried in order, before the source.
	Mirrors []Mirror
	// Origin names what configured the entry, for messages.
	Origin string
}

func (r *Registry) wildcard() bool { return strings.HasPrefix(r.Prefix, "*.") }

// Config is a complete mirror configuration. The zero value has no mirrors: every reference is
// pulled from the registry it names.
type Config struct {
	Registries []Registry
}

// file is the TOML layout of registries.conf (version 2).
type file struct {
	Registries []fileRegistry `toml:"registry"`
}

type fileRegistry struct {
	Prefix             string       `toml:"prefix"`
	Location           string       `toml:"location"`
	Insecure           bool         `toml:"insecure"`
	Blocked            bool         `toml:"blocked"`
	MirrorByDigestOnly bool         `toml:"mirror-by-digest-only"`
	Mirrors            []fileMirror `toml:"mirror"`
}

type fileMirror struct {
	Location       string `toml:"location"`
	Insecure       bool   `toml:"insecure"`
	PullFromMirror string `toml:"pull-from-mirror"`
}

// ignoredKeys are registries.conf settings that do not affect fully qualified references: they
// are accepted so that a node's registries.conf can be used as is.
var ignoredKeys = map[string]bool{
	"unqualified-search-registries":      true,
	"short-name-mode":                    true,
	"aliases":                            true,
	"credential-helpers":                 true,
	"additional-layer-store-auth-helper": true,
}

// Parse reads a registries.conf file (version 2 syntax). origin names it in messages and in the
// Origin of what it returns (usually its path). Unknown keys are errors, so that a misspelt
// setting is not silently ignored.
func Parse(data []byte, origin string) (*Config, error) {
	var f file
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return nil, fmt.Errorf("%s: not valid TOML: %w", origin, err)
	}
	if md.IsDefined("registries") {
		return nil, fmt.Errorf("%s: the version 1 syntax ([registries.search], [registries.insecure], [registries.block]) is not supported; write [[registry]] tables (version 2, containers-registries.conf(5))", origin)
	}
	var unknown []string
	for _, k := range md.Undecoded() {
		if len(k) > 0 && ignoredKeys[k[0]] {
			continue
		}
		unknown = append(unknown, k.String())
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%s: unknown keys %s (supported: [[registry]] prefix, location, insecure, blocked, mirror-by-digest-only and [[registry.mirror]] location, insecure, pull-from-mirror)", origin, strings.Join(unknown, ", "))
	}
	cfg := &Config{}
	seen := map[string]int{}
	for i, fr := range f.Registries {
		r, err := fr.convert(origin)
		if err != nil {
			return nil, fmt.Errorf("%s: [[registry]] #%d: %w", origin, i+1, err)
		}
		if j, dup := seen[r.Prefix]; dup {
			return nil, fmt.Errorf("%s: [[registry]] #%d and #%d both have prefix %q; merge them into one table", origin, j+1, i+1, r.Prefix)
		}
		seen[r.Prefix] = i
		cfg.Registries = append(cfg.Registries, r)
	}
	return cfg, nil
}

func (fr fileRegistry) convert(origin string) (Registry, error) {
	r := Registry{Prefix: fr.Prefix, Location: fr.Location, Insecure: fr.Insecure, Blocked: fr.Blocked, Origin: origin}
	if r.Prefix == "" {
		r.Prefix = r.Location
	}
	if r.Prefix == "" {
		return r, fmt.Errorf("neither prefix nor location is set")
	}
	if err := validPrefix(r.Prefix); err != nil {
		return r, fmt.Errorf("prefix %q: %w", r.Prefix, err)
	}
	switch {
	case r.wildcard() && r.Location != "":
		return r, fmt.Errorf("prefix %q is a wildcard, which cannot be remapped: remove location %q", r.Prefix, r.Location)
	case r.wildcard():
	case r.Location == "":
		r.Location = r.Prefix
	default:
		if err := validLocation(r.Location); err != nil {
			return r, fmt.Errorf("location %q: %w", r.Location, err)
		}
	}
	if r.Blocked {
		r.BlockedBy = origin
	}
	for i, fm := range fr.Mirrors {
		if err := validLocation(fm.Location); err != nil {
			return r, fmt.Errorf("[[registry.mirror]] #%d: location %q: %w", i+1, fm.Location, err)
		}
		pf := PullFrom(fm.PullFromMirror)
		switch pf {
		case "":
			pf = PullFromAll
			if fr.MirrorByDigestOnly {
				pf = PullFromDigestOnly
			}
		case PullFromAll, PullFromDigestOnly, PullFromTagOnly:
			if fr.MirrorByDigestOnly {
				return r, fmt.Errorf("[[registry.mirror]] #%d (%s): pull-from-mirror cannot be set when the registry sets mirror-by-digest-only; remove one of them", i+1, fm.Location)
			}
		default:
			return r, fmt.Errorf("[[registry.mirror]] #%d (%s): pull-from-mirror %q is not one of all, digest-only, tag-only", i+1, fm.Location, fm.PullFromMirror)
		}
		r.Mirrors = append(r.Mirrors, Mirror{Location: fm.Location, Insecure: fm.Insecure, PullFrom: pf, Origin: origin})
	}
	return r, nil
}

// validPrefix accepts host[:port][/path] and *.domain.
func validPrefix(p string) error {
	if rest, ok := strings.CutPrefix(p, "*."); ok {
		if rest == "" || strings.ContainsAny(rest, "/*@") {
			return fmt.Errorf("a wildcard prefix is *.domain alone, e.g. *.example.com (no path, tag or digest)")
		}
		return nil
	}
	if strings.Contains(p, "*") {
		return fmt.Errorf("* is allowed only as the first label of a host, e.g. *.example.com")
	}
	return validLocation(p)
}

// validLocation accepts host[:port][/path] with a registry host first.
func validLocation(l string) error {
	switch {
	case l == "":
		return fmt.Errorf("must not be empty")
	case strings.Contains(l, "://"):
		return fmt.Errorf("must be host[:port][/path], without a scheme (use insecure = true for plain HTTP)")
	case strings.ContainsAny(l, " \t\n*"), strings.HasPrefix(l, "/"), strings.HasSuffix(l, "/"):
		return fmt.Errorf("must be host[:port][/path], e.g. mirror.example.com/org")
	}
	host, path, _ := strings.Cut(l, "/")
	if !strings.ContainsAny(host, ".:") && host != "localhost" {
		return fmt.Errorf("must start with a registry host (a name with a dot or a port, or localhost), e.g. quay.io/org; got host %q", host)
	}
	if strings.ContainsAny(path, ":@") || strings.Contains(host, "@") {
		return fmt.Errorf("a tag or digest is not supported here: name a registry, namespace or repository, e.g. quay.io/org/repo")
	}
	return nil
}
