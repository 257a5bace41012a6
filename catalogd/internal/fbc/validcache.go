package fbc

import (
	"crypto/sha256"
	"encoding/hex"
	"iter"
	"sync"
)

// Model validation costs about as much as parsing, and most packages do not change between two
// versions of a catalog (nor between catalogs that carry the same package). Validation depends only
// on the blobs of one package, so a package whose canonical blobs were validated once is known to
// be valid: validPackages remembers the keys (sha256 of those blobs) of valid packages.

// validPackages is shared by every Load of the process.
var validPackages = newKeySet(20000)

// keySet is a bounded set of strings; the oldest keys are forgotten first.
type keySet struct {
	mu    sync.Mutex
	max   int
	keys  map[string]struct{}
	order []string
}

func newKeySet(max int) *keySet { return &keySet{max: max, keys: map[string]struct{}{}} }

func (k *keySet) has(key string) bool {
	if key == "" {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.keys[key]
	return ok
}

func (k *keySet) add(key string) {
	if key == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.keys[key]; ok {
		return
	}
	if len(k.order) >= k.max {
		delete(k.keys, k.order[0])
		k.order = k.order[1:]
	}
	k.keys[key] = struct{}{}
	k.order = append(k.order, key)
}

// ForgetValidatedPackages makes the next Loads validate every package again, as the first Load of a
// process does. Benchmarks use it to measure cold loads.
func ForgetValidatedPackages() { validPackages.reset() }

// reset forgets every key.
func (k *keySet) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys, k.order = map[string]struct{}{}, nil
}

// packageKeys returns, per package, the sha256 of the canonical blobs that validation reads for it
// (its olm.package, olm.channel, olm.bundle and olm.deprecations blobs), in canonical order.
func packageKeys(metas []Meta) map[string]string {
	byPkg := map[string][]Meta{}
	for _, m := range metas {
		if pkg, ok := validationPackage(m.Schema, m.Package, m.Name); ok {
			byPkg[pkg] = append(byPkg[pkg], m)
		}
	}
	keys := make(map[string]string, len(byPkg))
	for pkg, ms := range byPkg {
		keys[pkg] = packageKey(pkg, func(yield func(schema string, blob []byte) bool) {
			for _, m := range ms {
				if !yield(m.Schema, m.Blob) {
					return
				}
			}
		})
	}
	return keys
}

// packageKey is the key of package pkg whose blobs, in canonical order, blobs yields.
func packageKey(pkg string, blobs iter.Seq2[string, []byte]) string {
	h := sha256.New()
	h.Write([]byte(pkg))
	h.Write([]byte{0})
	for schema, blob := range blobs {
		h.Write([]byte(schema))
		h.Write([]byte{0})
		h.Write(blob)
		h.Write(newline)
	}
	return hex.EncodeToString(h.Sum(nil))
}
