package mirrors

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The mirror set kinds of config.openshift.io/v1 (cluster-scoped).
const (
	KindImageDigestMirrorSet = "ImageDigestMirrorSet"
	KindImageTagMirrorSet    = "ImageTagMirrorSet"

	// NeverContactSource is the mirrorSourcePolicy that blocks the source.
	NeverContactSource = "NeverContactSource"
)

// MirrorSet is one ImageDigestMirrorSet (its mirrors serve digest references only) or
// ImageTagMirrorSet (tag references only).
type MirrorSet struct {
	Kind    string
	Name    string
	Entries []MirrorSetEntry
}

// MirrorSetEntry is one item of spec.imageDigestMirrors or spec.imageTagMirrors.
type MirrorSetEntry struct {
	// Source is host[:port][/path] or *.domain.
	Source string
	// Mirrors are host[:port][/path], tried in order.
	Mirrors []string
	// NeverContactSource: mirrorSourcePolicy NeverContactSource (default AllowContactingSource).
	NeverContactSource bool
}

func (s MirrorSet) origin() string { return fmt.Sprintf("%s %q", s.Kind, s.Name) }

func (s MirrorSet) field() string {
	if s.Kind == KindImageTagMirrorSet {
		return "spec.imageTagMirrors"
	}
	return "spec.imageDigestMirrors"
}

// MirrorSetFromUnstructured reads an ImageDigestMirrorSet or ImageTagMirrorSet.
func MirrorSetFromUnstructured(u *unstructured.Unstructured) (MirrorSet, error) {
	s := MirrorSet{Kind: u.GetKind(), Name: u.GetName()}
	if s.Kind != KindImageDigestMirrorSet && s.Kind != KindImageTagMirrorSet {
		return s, fmt.Errorf("%s is not an %s or %s", s.origin(), KindImageDigestMirrorSet, KindImageTagMirrorSet)
	}
	items, _, err := unstructured.NestedSlice(u.Object, "spec", s.field()[len("spec."):])
	if err != nil {
		return s, fmt.Errorf("%s: %s: %w", s.origin(), s.field(), err)
	}
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return s, fmt.Errorf("%s: %s[%d] is not an object", s.origin(), s.field(), i)
		}
		var e MirrorSetEntry
		e.Source, _, _ = unstructured.NestedString(m, "source")
		e.Mirrors, _, _ = unstructured.NestedStringSlice(m, "mirrors")
		policy, _, _ := unstructured.NestedString(m, "mirrorSourcePolicy")
		switch policy {
		case "", "AllowContactingSource":
		case NeverContactSource:
			e.NeverContactSource = true
		default:
			return s, fmt.Errorf("%s: %s[%d].mirrorSourcePolicy %q is not AllowContactingSource or NeverContactSource", s.origin(), s.field(), i, policy)
		}
		s.Entries = append(s.Entries, e)
	}
	return s, nil
}

// Merge adds the mirror sets to the file's configuration (which may be nil) and returns a new
// Config; file is not modified.
//
// Order: for a source that also is a prefix of the file, the file's mirrors come first, then
// those of the ImageDigestMirrorSets, then those of the ImageTagMirrorSets, each kind in order of
// object name and each object's mirrors in their listed order. A source that is not a prefix of
// the file becomes an entry of its own, which takes insecure and blocked from the file's entry
// matching it (if any). A mirror of a set is insecure when the file's entry matching it says
// insecure = true. NeverContactSource blocks the source for every reference, digest or tag, as
// OpenShift does.
func Merge(file *Config, sets []MirrorSet) (*Config, error) {
	out := &Config{}
	if file != nil {
		for _, r := range file.Registries {
			r.Mirrors = append([]Mirror(nil), r.Mirrors...)
			out.Registries = append(out.Registries, r)
		}
	}
	sorted := append([]MirrorSet(nil), sets...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Kind != sorted[j].Kind {
			return sorted[i].Kind == KindImageDigestMirrorSet
		}
		return sorted[i].Name < sorted[j].Name
	})
	index := map[string]int{}
	for i, r := range out.Registries {
		index[r.Prefix] = i
	}
	for _, s := range sorted {
		pf := PullFromDigestOnly
		if s.Kind == KindImageTagMirrorSet {
			pf = PullFromTagOnly
		}
		for i, e := range s.Entries {
			if err := validPrefix(e.Source); err != nil {
				return nil, fmt.Errorf("%s: %s[%d].source %q: %w", s.origin(), s.field(), i, e.Source, err)
			}
			n, ok := index[e.Source]
			if !ok {
				r := Registry{Prefix: e.Source, Location: e.Source, Origin: s.origin()}
				if r.wildcard() {
					r.Location = ""
				}
				if fr := file.match(e.Source); fr != nil {
					r.Insecure, r.Blocked, r.BlockedBy = fr.Insecure, fr.Blocked, fr.BlockedBy
				}
				out.Registries = append(out.Registries, r)
				n = len(out.Registries) - 1
				index[e.Source] = n
			}
			r := &out.Registries[n]
			if e.NeverContactSource && !r.Blocked {
				r.Blocked, r.BlockedBy = true, fmt.Sprintf("%s (mirrorSourcePolicy %s)", s.origin(), NeverContactSource)
			}
			for j, loc := range e.Mirrors {
				if err := validLocation(loc); err != nil {
					return nil, fmt.Errorf("%s: %s[%d].mirrors[%d] %q: %w", s.origin(), s.field(), i, j, loc, err)
				}
				if hasMirror(r.Mirrors, loc, pf) {
					continue
				}
				insecure := false
				if fr := file.match(loc); fr != nil {
					insecure = fr.Insecure
				}
				r.Mirrors = append(r.Mirrors, Mirror{Location: loc, Insecure: insecure, PullFrom: pf, Origin: s.origin()})
			}
		}
	}
	return out, nil
}

func hasMirror(ms []Mirror, location string, pf PullFrom) bool {
	for _, m := range ms {
		if m.Location == location && (m.PullFrom == pf || m.PullFrom == PullFromAll) {
			return true
		}
	}
	return false
}
