package fbc

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/runenames"
)

// The schema, package and name of a blob are its identity: catalogd indexes and serves blobs by
// them (the HTTP metas query, CatalogMetadata names, labels and field selectors), operator-controller
// resolves by them, and people read them in kubectl tables. checkNames refuses an identity that
// could not be served as written or that would read as something it is not:
//
//   - invalid UTF-8 (JSON cannot carry it: the served blob would hold U+FFFD where the index holds
//     the raw bytes), and U+FFFD itself, which is what JSON decoding makes of invalid UTF-8;
//   - control characters, NUL included (terminal escapes in kubectl output, separators in keys);
//   - invisible characters: format characters (zero-width spaces and joiners, bidirectional
//     overrides and isolates that make "abc" display as "cba", the byte order mark, the soft hyphen),
//     line and paragraph separators, spaces other than U+0020, private-use characters and
//     noncharacters, and a leading or trailing space — each makes two different names look alike;
//   - text not in Unicode normalization form C ("é" written as "e" and a combining accent), for the
//     same reason;
//   - a channel or bundle name longer than maxNameLength bytes.
//
// Letters, digits, punctuation and symbols of any script are accepted and served as written in
// channel and bundle names (and in the fields of other schemas). Package names are further held
// to lower-case DNS labels of at most 63 characters by operator-registry's model validation.

// maxNameLength bounds channel and bundle names (and the package field): an Operator names a
// channel with at most 253 characters (spec.channel), and bundle names are ClusterServiceVersion
// names, Kubernetes object names of at most 253 characters.
const maxNameLength = 253

// checkNames returns an error naming the field and the offending value when m's identity is
// refused (see above).
func checkNames(m Meta) error {
	core := m.Schema == declcfg.SchemaPackage || m.Schema == declcfg.SchemaChannel ||
		m.Schema == declcfg.SchemaBundle || m.Schema == declcfg.SchemaDeprecation
	for _, f := range []struct {
		field, value string
		limit        bool
	}{
		{"schema", m.Schema, false},
		{fieldName(m.Schema, "package"), m.Package, core},
		{fieldName(m.Schema, "name"), m.Name, core},
	} {
		if f.value == "" {
			continue
		}
		if problem, ascii := nameProblem(f.value, f.limit); problem != "" {
			blob := "blob"
			if p, _ := nameProblem(m.Schema, false); p == "" {
				blob = m.Schema + " blob"
			}
			return fmt.Errorf("%s%s: %s %s %s", blob, blobOf(m), f.field, quoteName(f.value, ascii), problem)
		}
	}
	return nil
}

// fieldName says what a meta field is in a blob of schema: "package name" for the name of an
// olm.package, "channel name", "bundle name"; "package" for the package of the others.
func fieldName(schema, field string) string {
	if field == "package" {
		return "package"
	}
	switch schema {
	case declcfg.SchemaPackage:
		return "package name"
	case declcfg.SchemaChannel:
		return "channel name"
	case declcfg.SchemaBundle:
		return "bundle name"
	}
	return "name"
}

// blobOf names the blob's package for the message, when it has one that is not the offending field.
func blobOf(m Meta) string {
	if p, _ := nameProblem(m.Package, true); m.Package != "" && p == "" {
		return fmt.Sprintf(" of package %q", m.Package)
	}
	return ""
}

// nameProblem says what is wrong with s, or returns "". ascii says that s should be quoted with
// every non-ASCII character escaped, for the problem to show.
func nameProblem(s string, limit bool) (problem string, ascii bool) {
	if i := firstInvalidUTF8(s); i >= 0 {
		return fmt.Sprintf("is not valid UTF-8 (byte 0x%02x at offset %d); names must be UTF-8 text", s[i], i), false
	}
	for i, r := range s {
		if what := invisible(r); what != "" {
			return fmt.Sprintf("holds %s at byte %d, %s; names may hold letters, digits, punctuation, symbols and inner spaces (U+0020) only", describeRune(r), i, what), r == utf8.RuneError
		}
	}
	if strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		return "starts or ends with a space, which nobody can see in a listing; remove it", false
	}
	if !norm.NFC.IsNormalString(s) {
		return fmt.Sprintf("is not in Unicode normalization form C (it spells a character as a base and a combining mark, which looks the same as the single character); write it as %+q", norm.NFC.String(s)), true
	}
	if limit && len(s) > maxNameLength {
		return fmt.Sprintf("is too long: channel and bundle names may be at most %d bytes (the limit of an Operator's spec.channel and of a ClusterServiceVersion's name)", maxNameLength), false
	}
	return "", false
}

func firstInvalidUTF8(s string) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// invisible says why r has no place in a name, or returns "".
func invisible(r rune) string {
	switch {
	case r == utf8.RuneError:
		return "the replacement character that decoders write for bytes that are not UTF-8"
	case unicode.Is(unicode.Cc, r):
		return "a control character"
	case unicode.Is(unicode.Bidi_Control, r):
		return "an invisible character that changes the direction in which text is displayed"
	case unicode.Is(unicode.Cf, r):
		return "an invisible formatting character"
	case unicode.In(r, unicode.Zl, unicode.Zp):
		return "a line or paragraph separator"
	case unicode.Is(unicode.Zs, r) && r != ' ':
		return "a space that is not U+0020 and looks like one"
	case unicode.Is(unicode.Co, r):
		return "a private-use character, which has no agreed appearance"
	case unicode.Is(unicode.Noncharacter_Code_Point, r):
		return "a Unicode noncharacter"
	}
	return ""
}

// describeRune writes r as "U+202E (RIGHT-TO-LEFT OVERRIDE)".
func describeRune(r rune) string {
	if name := runenames.Name(r); name != "" && !strings.HasPrefix(name, "<") {
		return fmt.Sprintf("U+%04X (%s)", r, name)
	}
	return fmt.Sprintf("U+%04X", r)
}

// quoteName quotes s with Go escapes (so that invisible characters and invalid bytes show; with
// ascii, every non-ASCII character too), cut after 64 bytes.
func quoteName(s string, ascii bool) string {
	const show = 64
	verb := "%q"
	if ascii {
		verb = "%+q"
	}
	if len(s) <= show {
		return fmt.Sprintf(verb, s)
	}
	cut := show
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf(verb+"... (%d bytes)", s[:cut], len(s))
}
