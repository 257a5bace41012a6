package metadataapi

// Resource versions and continue tokens of the CatalogMetadata API.
//
// They are derived from the served content, never from a counter of this process, so every catalogd
// replica serving the same content, and a replica restarted over the same store, gives the same ones:
//
//   - A state's resourceVersion (a list's, a bookmark's) names the set of served catalogs and their
//     content hashes: the first 16 hex digits of
//     sha256("catalogd.metadata/v1" NUL, then catalog NUL contentHash NUL for each catalog in name order).
//   - An object's resourceVersion names its content: the first 16 hex digits of
//     sha256(catalog NUL schema NUL package NUL name NUL blob). It changes exactly when the blob does.
//   - A continue token names the list's state, where the next page starts (a catalog and how many of
//     its matching blobs were already returned), a digest of the content of that catalog and of every
//     later catalog the list covers, and a digest of the selectors. Any replica whose content of those
//     catalogs is the same continues the list; any other answers 410 Gone.
//
// Watching from a state's resourceVersion works on any replica that serves that state or still
// retains it in its recent history (see history.go); otherwise the answer is 410 Gone and clients
// list again. A value that cannot be one of ours is 400 Bad Request.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// versionLen is the length of every resourceVersion catalogd issues: 16 lowercase hex digits.
const versionLen = 16

// stateVersion is the resourceVersion of a served state: catalog name → content hash.
func stateVersion(hashes map[string]string) string {
	names := make([]string, 0, len(hashes))
	for c := range hashes {
		names = append(names, c)
	}
	sort.Strings(names)
	h := sha256.New()
	h.Write([]byte("catalogd.metadata/v1\x00"))
	for _, c := range names {
		h.Write([]byte(c + "\x00" + hashes[c] + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))[:versionLen]
}

// blobDigest identifies a blob and its content; its first bytes are the object's resourceVersion.
func blobDigest(catalog string, b Blob) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(catalog + "\x00" + b.Schema + "\x00" + b.Package + "\x00" + b.Name + "\x00"))
	h.Write(b.Content)
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// objectVersion is the resourceVersion of an object whose blobDigest is d.
func objectVersion(d [sha256.Size]byte) string {
	return hex.EncodeToString(d[:])[:versionLen]
}

// versionKind classifies a requested resourceVersion.
type versionKind int

const (
	// versionAny: "" or "0", any state will do (the current one is served).
	versionAny versionKind = iota
	// versionDigest: one catalogd issued (a state's or an object's).
	versionDigest
	// versionLegacy: a decimal counter of a catalogd from before content-derived versions.
	versionLegacy
)

// parseVersion classifies rv; a value catalogd never issues is a 400 Bad Request saying what is expected.
func parseVersion(rv string) (versionKind, error) {
	switch {
	case rv == "" || rv == "0":
		return versionAny, nil
	case isVersion(rv):
		return versionDigest, nil
	case isDecimal(rv):
		return versionLegacy, nil
	}
	return 0, apierrors.NewBadRequest(fmt.Sprintf(
		"invalid resourceVersion %s: catalogd's resourceVersions are %d lowercase hexadecimal digits; pass the metadata.resourceVersion of a list or object unchanged, or omit it", quoteShort(rv), versionLen))
}

// quoteShort quotes a value a client sent for an error message (%q, so that invisible
// characters show), keeping at most its first 64 bytes.
func quoteShort(s string) string {
	const max = 64
	if len(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	end := max
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:end], len(s))
}

func isVersion(s string) bool {
	if len(s) != versionLen {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9') && !(r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

func isDecimal(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// goneError is the 410 Gone answer to a resourceVersion this replica cannot serve from.
func goneError(rv string, kind versionKind, retained int) error {
	if kind == versionLegacy {
		return apierrors.NewResourceExpired(fmt.Sprintf(
			"resourceVersion %q comes from an older catalogd (resourceVersions are now derived from the served content): list again", rv))
	}
	return apierrors.NewResourceExpired(fmt.Sprintf(
		"resourceVersion %q is not a state of the catalog content this catalogd replica serves or retains "+
			"(it may come from a replica serving other content, from before a restart, from before the last %d changes, "+
			"or be an object's resourceVersion): list again and watch from the list's resourceVersion", rv, retained))
}

// continueToken marks where a paginated list stopped.
type continueToken struct {
	// Version of the token format: 1.
	Version int `json:"v"`
	// RV is the resourceVersion of the first page's state; every page answers it.
	RV string `json:"rv"`
	// Catalog is where the next page starts; Offset is how many of its matching blobs were returned.
	Catalog string `json:"c"`
	Offset  int    `json:"o"`
	// Rest is the stateVersion of Catalog and of every later catalog the list covers: the next page
	// is served only from that content.
	Rest string `json:"r"`
	// Selector is selectorDigest of the list's label and field selectors.
	Selector string `json:"s"`
}

const continueVersion = 1

func (t continueToken) encode() string {
	raw, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// decodeContinue parses a continue token; anything catalogd did not issue is a 400 Bad Request that
// says what is wrong with it.
func decodeContinue(s string) (*continueToken, error) {
	bad := func(why string) error {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %s; pass the continue value of the previous page unchanged, or list again without it", why))
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad("not unpadded base64url")
	}
	t := &continueToken{}
	if err := json.Unmarshal(raw, t); err != nil {
		return nil, bad("not a catalogd token")
	}
	switch {
	case t.Version != continueVersion && t.RV == "" && t.Catalog != "":
		// {c, o, v: counter}: a token of a catalogd from before content-derived versions.
		return nil, apierrors.NewResourceExpired("continue token from an older catalogd (resourceVersions are now derived from the served content): list again without continue")
	case t.Version != continueVersion:
		return nil, bad(fmt.Sprintf("format %d, this catalogd issues format %d", t.Version, continueVersion))
	case !isVersion(t.RV) || !isVersion(t.Rest) || !isVersion(t.Selector):
		return nil, bad("its versions are not catalogd resourceVersions")
	case t.Catalog == "" || t.Offset < 0:
		return nil, bad("it names no position")
	}
	return t, nil
}

// selectorDigest identifies a list's selectors, so a token is not continued with other ones.
func selectorDigest(label labels.Selector, field fields.Selector) string {
	sum := sha256.Sum256([]byte(label.String() + "\x00" + field.String()))
	return hex.EncodeToString(sum[:])[:versionLen]
}
