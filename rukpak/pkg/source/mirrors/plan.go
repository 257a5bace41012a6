package mirrors

import (
	"fmt"
	"strings"
)

// Image is a fully qualified image reference, split for matching.
type Image struct {
	// Repository is host[:port]/path, with docker.io for Docker Hub (docker.io/library/busybox).
	Repository string
	// Tag or Digest: exactly one is set.
	Tag    string
	Digest string
}

// IsDigest reports whether the reference is by digest.
func (i Image) IsDigest() bool { return i.Digest != "" }

// String is repository:tag or repository@digest.
func (i Image) String() string { return i.Repository + i.suffix() }

func (i Image) suffix() string {
	if i.IsDigest() {
		return "@" + i.Digest
	}
	return ":" + i.Tag
}

// host is the host[:port] of the repository.
func (i Image) host() string {
	h, _, _ := strings.Cut(i.Repository, "/")
	return h
}

// Endpoint is one place to pull an image from.
type Endpoint struct {
	// Ref is the reference to pull there, with the image's own tag or digest.
	Ref string
	// Mirror is false for the source: the registry the reference names (or its remapped location).
	Mirror bool
	// Insecure allows plain HTTP and unverified TLS.
	Insecure bool
	// Origin names what configured the endpoint (empty for a source no entry matched).
	Origin string
}

// Plan says where one image is pulled from.
type Plan struct {
	// Image is the reference planned for.
	Image Image
	// Endpoints are tried in order: the mirrors serving this kind of reference, then the source
	// unless it is blocked. Empty when the source is blocked and no mirror serves the reference.
	Endpoints []Endpoint
	// Matched is the entry that applied, nil when none did (then Endpoints is the reference itself).
	Matched *Registry
	// Unused lists the mirrors of the entry that do not serve this kind of reference, for messages:
	// `mirror.example.com/org (digest-only, from /etc/olmv1/registries.conf)`.
	Unused []string
}

// Mirrored reports whether the configuration changes anything for this reference: a mirror, a
// remapped location, a blocked or insecure source.
func (p Plan) Mirrored() bool {
	return len(p.Endpoints) != 1 || p.Endpoints[0].Mirror || p.Endpoints[0].Ref != p.Image.String() || p.Endpoints[0].Insecure
}

// Blocked reports whether the source is blocked.
func (p Plan) Blocked() bool { return p.Matched != nil && p.Matched.Blocked }

// Plan returns the endpoints to pull img from. A nil Config plans the reference itself.
func (c *Config) Plan(img Image) Plan {
	p := Plan{Image: img}
	var r *Registry
	if c != nil {
		r = c.match(img.Repository)
	}
	if r == nil {
		p.Endpoints = []Endpoint{{Ref: img.String()}}
		return p
	}
	p.Matched = r
	remainder, source := r.rewrite(img)
	seen := map[string]bool{}
	for _, m := range r.Mirrors {
		if !m.PullFrom.serves(img.IsDigest()) {
			p.Unused = append(p.Unused, fmt.Sprintf("%s (%s, from %s)", m.Location, m.PullFrom, m.Origin))
			continue
		}
		ref := m.Location + remainder
		if seen[ref] {
			continue
		}
		seen[ref] = true
		p.Endpoints = append(p.Endpoints, Endpoint{Ref: ref, Mirror: true, Insecure: m.Insecure, Origin: m.Origin})
	}
	if !r.Blocked && !seen[source] {
		p.Endpoints = append(p.Endpoints, Endpoint{Ref: source, Insecure: r.Insecure, Origin: r.Origin})
	}
	return p
}

// rewrite returns what follows the matched prefix in img (path, then tag or digest) and the
// reference at the source location.
func (r *Registry) rewrite(img Image) (remainder, source string) {
	full := img.String()
	if r.wildcard() {
		return full[len(img.host()):], full
	}
	remainder = full[len(r.Prefix):]
	return remainder, r.Location + remainder
}

// match returns the entry for a repository: the longest exact prefix, else the longest wildcard.
func (c *Config) match(repository string) *Registry {
	if c == nil {
		return nil
	}
	var best *Registry
	bestWild := true
	host, _, _ := strings.Cut(repository, "/")
	for i := range c.Registries {
		r := &c.Registries[i]
		if r.wildcard() {
			domain := r.Prefix[1:] // ".example.com"
			if len(host) > len(domain) && strings.HasSuffix(host, domain) && !strings.Contains(host, ":") &&
				(best == nil || bestWild && len(r.Prefix) > len(best.Prefix)) {
				best = r
			}
			continue
		}
		if prefixMatches(repository, r.Prefix) && (best == nil || bestWild || len(r.Prefix) > len(best.Prefix)) {
			best, bestWild = r, false
		}
	}
	return best
}

// prefixMatches reports whether repository is prefix or lies under it (at a "/" boundary).
func prefixMatches(repository, prefix string) bool {
	return repository == prefix || strings.HasPrefix(repository, prefix+"/")
}
