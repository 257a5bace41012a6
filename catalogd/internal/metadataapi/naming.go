package metadataapi

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ObjectName is the name of a blob's metadatav1alpha1.CatalogMetadata object. FBC names may hold any characters and be
// of any length, so the name is a readable, sanitised prefix plus a hash of the exact identity:
//
//	<catalog>.<schema without "olm.">.<package>.<name>-<first 10 hex of sha256(catalog\x00schema\x00package\x00name)>
//
// lower-cased, with every character outside [a-z0-9.-] replaced by "-", and the readable part
// shortened so the whole name stays within 253 characters. The hash makes names unique; the prefix
// makes them recognisable. Use field selectors (spec.name=...) to find an object by its FBC name.
func ObjectName(catalog, schema, pkg, name string) string {
	sum := sha256.Sum256([]byte(catalog + "\x00" + schema + "\x00" + pkg + "\x00" + name))
	suffix := hex.EncodeToString(sum[:])[:10]
	parts := []string{catalog, strings.TrimPrefix(schema, "olm.")}
	if pkg != "" {
		parts = append(parts, pkg)
	}
	if name != "" && name != pkg {
		parts = append(parts, name)
	}
	readable := sanitize(strings.Join(parts, "."))
	if max := validation.DNS1123SubdomainMaxLength - len(suffix) - 1; len(readable) > max {
		readable = strings.TrimRight(readable[:max], ".-")
	}
	return readable + "-" + suffix
}

// sanitize lower-cases s, replaces characters outside [a-z0-9.-] with "-", and trims "-" from each
// dot-separated label, dropping empty ones, so that the result is a valid DNS subdomain prefix.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '.' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	var labels []string
	for _, l := range strings.Split(b.String(), ".") {
		if l = strings.Trim(l, "-"); l != "" {
			labels = append(labels, l)
		}
	}
	return strings.Join(labels, ".")
}

// objectLabels are the selectable labels of a blob: catalog, schema, package and name, each only when
// its value is a valid label value (long or unusual values are reachable through field selectors).
func objectLabels(catalog, schema, pkg, name string) labels.Set {
	set := make(labels.Set, 4)
	for _, kv := range [4][2]string{{"catalog", catalog}, {"schema", schema}, {"package", pkg}, {"name", name}} {
		if kv[1] != "" && isLabelValue(kv[1]) {
			set[kv[0]] = kv[1]
		}
	}
	return set
}

// isLabelValue is validation.IsValidLabelValue without its regular expression (it runs for every
// object of every answer): at most 63 characters, alphanumerics with '-', '_' or '.' between them.
func isLabelValue(v string) bool {
	if len(v) > 63 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || i == len(v)-1 || (c != '-' && c != '_' && c != '.')) {
			return false
		}
	}
	return true
}
