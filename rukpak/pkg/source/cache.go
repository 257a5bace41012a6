package source

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// The cache directory holds:
//
//	images/<alg>-<hex>/<dir>/   the directory <dir> of an image, extracted once per digest and shared
//	                            by every key that resolves to that digest ("root" is the whole image)
//	keys/<key>/record.json      what the key last unpacked: its content directory and resolved source
//	keys/<key>/content-<n>/     the content of a ConfigMaps, HTTP or Git source of that key
//	tmp/                        staging; wiped when an Unpacker starts
//
// Content is staged in tmp/ and renamed into place, so a directory named by a record is always
// complete. An image entry or content directory that no record names is garbage: what a key stops
// naming is removed after every Unpack, Cleanup and Prune, and everything is checked when an
// Unpacker starts.
const (
	imagesDir  = "images"
	keysDir    = "keys"
	tmpDir     = "tmp"
	recordFile = "record.json"
)

// record is what one key last unpacked.
type record struct {
	Key string `json:"key"`
	// Dir is the content directory, relative to the cache directory.
	Dir string `json:"dir"`
	// Fingerprint identifies the parts of the spec that shape the content beyond the resolved
	// source (e.g. a git directory, ConfigMap paths); content is reused only when it matches.
	Fingerprint string                        `json:"fingerprint"`
	Resolved    rukpakv1alpha1.ResolvedSource `json:"resolved"`
}

type cache struct {
	dir string

	mu      sync.Mutex // guards records and everything under images/ and keys/
	records map[string]*record

	keyLocks   keyedMutex
	entryLocks keyedMutex
}

func openCache(dir string) (*cache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &cache{dir: abs, records: map[string]*record{}}
	if err := os.RemoveAll(filepath.Join(abs, tmpDir)); err != nil {
		return nil, err
	}
	for _, d := range []string{imagesDir, keysDir, tmpDir} {
		if err := os.MkdirAll(filepath.Join(abs, d), 0o755); err != nil {
			return nil, err
		}
	}
	keyDirs, err := os.ReadDir(filepath.Join(abs, keysDir))
	if err != nil {
		return nil, err
	}
	for _, kd := range keyDirs {
		data, err := os.ReadFile(filepath.Join(abs, keysDir, kd.Name(), recordFile))
		if err != nil {
			continue // no record: garbage, removed below
		}
		var r record
		if err := json.Unmarshal(data, &r); err != nil || r.Key == "" || keySlug(r.Key) != kd.Name() || !c.exists(r.Dir) {
			continue
		}
		c.records[r.Key] = &r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c, c.gcLocked()
}

// keySlug names a key's directory: readable, and unique thanks to a hash of the key.
func keySlug(key string) string {
	return slug(key, 80)
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9.-]+`)

func slug(s string, maxLen int) string {
	sum := sha256.Sum256([]byte(s))
	readable := unsafeChars.ReplaceAllString(strings.ToLower(s), "_")
	readable = strings.Trim(readable, "._")
	if len(readable) > maxLen {
		readable = readable[:maxLen]
	}
	return readable + "-" + hex.EncodeToString(sum[:4])
}

// imageEntry is the cache path, relative to the cache directory, of directory dir of an image.
func imageEntry(digest, dir string) string {
	sub := "root"
	if dir != "" {
		sub = "dir-" + slug(dir, 60)
	}
	return filepath.Join(imagesDir, strings.Replace(digest, ":", "-", 1), sub)
}

func (c *cache) abs(rel string) string { return filepath.Join(c.dir, rel) }

func (c *cache) exists(rel string) bool {
	fi, err := os.Stat(c.abs(rel))
	return err == nil && fi.IsDir()
}

// stage returns a new empty directory to unpack into, to be committed or removed.
func (c *cache) stage() (string, error) {
	d, err := os.MkdirTemp(c.abs(tmpDir), "unpack-")
	if err != nil {
		return "", newError(KindInternal, err, "creating a staging directory in %s: %v", c.dir, err)
	}
	return d, nil
}

// lookup returns a copy of key's record when its content directory exists.
func (c *cache) lookup(key string) *record {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.records[key]
	if !ok || !c.exists(r.Dir) {
		return nil
	}
	cp := *r
	return &cp
}

// useImage points key at an existing image entry and reports whether it existed.
func (c *cache) useImage(key, entry string, resolved rukpakv1alpha1.ResolvedSource, fingerprint string) (string, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.exists(entry) {
		return "", false, nil
	}
	return c.abs(entry), true, c.setLocked(&record{Key: key, Dir: entry, Fingerprint: fingerprint, Resolved: resolved})
}

// commitImage moves staged into place as an image entry (unless another key got there first) and
// points key at it.
func (c *cache) commitImage(key, entry, staged string, resolved rukpakv1alpha1.ResolvedSource, fingerprint string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.exists(entry) {
		if err := os.MkdirAll(filepath.Dir(c.abs(entry)), 0o755); err != nil {
			return "", newError(KindInternal, err, "storing image content: %v", err)
		}
		if err := os.Rename(staged, c.abs(entry)); err != nil {
			return "", newError(KindInternal, err, "storing image content: %v", err)
		}
	}
	return c.abs(entry), c.setLocked(&record{Key: key, Dir: entry, Fingerprint: fingerprint, Resolved: resolved})
}

// commitContent moves staged into place as key's own content directory.
func (c *cache) commitContent(key, staged string, resolved rukpakv1alpha1.ResolvedSource, fingerprint string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keyDir := filepath.Join(keysDir, keySlug(key))
	if err := os.MkdirAll(c.abs(keyDir), 0o755); err != nil {
		return "", newError(KindInternal, err, "storing content: %v", err)
	}
	dir := filepath.Join(keyDir, fmt.Sprintf("content-%d", time.Now().UnixNano()))
	if err := os.Rename(staged, c.abs(dir)); err != nil {
		return "", newError(KindInternal, err, "storing content: %v", err)
	}
	return c.abs(dir), c.setLocked(&record{Key: key, Dir: dir, Fingerprint: fingerprint, Resolved: resolved})
}

// setLocked saves r (atomically, by rename) and collects what the key no longer uses.
func (c *cache) setLocked(r *record) error {
	keyDir := c.abs(filepath.Join(keysDir, keySlug(r.Key)))
	if err := os.MkdirAll(keyDir, 0o755); err != nil {
		return newError(KindInternal, err, "saving the cache record of %q: %v", r.Key, err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return newError(KindInternal, err, "saving the cache record of %q: %v", r.Key, err)
	}
	tmp := filepath.Join(keyDir, recordFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return newError(KindInternal, err, "saving the cache record of %q: %v", r.Key, err)
	}
	if err := os.Rename(tmp, filepath.Join(keyDir, recordFile)); err != nil {
		return newError(KindInternal, err, "saving the cache record of %q: %v", r.Key, err)
	}
	old := c.records[r.Key]
	c.records[r.Key] = r
	if old == nil || old.Dir == r.Dir {
		return nil
	}
	return c.releaseLocked(old.Dir)
}

// remove forgets key and deletes what only it used.
func (c *cache) remove(key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.records[key]
	delete(c.records, key)
	if err := os.RemoveAll(c.abs(filepath.Join(keysDir, keySlug(key)))); err != nil {
		return newError(KindInternal, err, "removing the content of %q: %v", key, err)
	}
	if old == nil {
		return nil
	}
	return c.releaseLocked(old.Dir)
}

// releaseLocked removes dir (relative to the cache directory), which a key no longer names, unless
// another record still does, and then its image's directory once that is empty: the only garbage
// one change can leave. It reads no directory but that one image's, where gcLocked (at start-up)
// reads them all: collecting everything after each unpack cost O(n) per unpack, O(n²) for n
// BundleDeployments.
func (c *cache) releaseLocked(dir string) error {
	for _, r := range c.records {
		if r.Dir == dir {
			return nil
		}
	}
	if err := os.RemoveAll(c.abs(dir)); err != nil {
		return newError(KindInternal, err, "removing unused content %s from %s: %v", dir, c.dir, err)
	}
	image := filepath.Dir(dir)
	if filepath.Dir(image) != imagesDir {
		return nil
	}
	if entries, err := os.ReadDir(c.abs(image)); err == nil && len(entries) == 0 {
		if err := os.Remove(c.abs(image)); err != nil && !os.IsNotExist(err) {
			return newError(KindInternal, err, "removing unused content %s from %s: %v", image, c.dir, err)
		}
	}
	return nil
}

func (c *cache) keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.records))
	for k := range c.records {
		out = append(out, k)
	}
	return out
}

// gcLocked removes every image entry, key directory and content directory no record names.
func (c *cache) gcLocked() error {
	used := map[string]bool{}
	slugs := map[string]bool{}
	for _, r := range c.records {
		used[r.Dir] = true
		slugs[keySlug(r.Key)] = true
	}
	var errs []error
	digests, _ := os.ReadDir(c.abs(imagesDir))
	for _, d := range digests {
		entries, _ := os.ReadDir(c.abs(filepath.Join(imagesDir, d.Name())))
		kept := 0
		for _, e := range entries {
			rel := filepath.Join(imagesDir, d.Name(), e.Name())
			if used[rel] {
				kept++
				continue
			}
			errs = append(errs, os.RemoveAll(c.abs(rel)))
		}
		if kept == 0 {
			errs = append(errs, os.RemoveAll(c.abs(filepath.Join(imagesDir, d.Name()))))
		}
	}
	keyDirs, _ := os.ReadDir(c.abs(keysDir))
	for _, kd := range keyDirs {
		keyDir := filepath.Join(keysDir, kd.Name())
		if !slugs[kd.Name()] {
			errs = append(errs, os.RemoveAll(c.abs(keyDir)))
			continue
		}
		entries, _ := os.ReadDir(c.abs(keyDir))
		for _, e := range entries {
			rel := filepath.Join(keyDir, e.Name())
			if strings.HasPrefix(e.Name(), "content-") && !used[rel] {
				errs = append(errs, os.RemoveAll(c.abs(rel)))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return newError(KindInternal, err, "removing unused content from %s: %v", c.dir, err)
	}
	return nil
}

// keyedMutex hands out one mutex per name.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*refMutex
}

type refMutex struct {
	sync.Mutex
	refs int
}

// lock locks name and returns the function that unlocks it.
func (k *keyedMutex) lock(name string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*refMutex{}
	}
	m, ok := k.locks[name]
	if !ok {
		m = &refMutex{}
		k.locks[name] = m
	}
	m.refs++
	k.mu.Unlock()
	m.Lock()
	return func() {
		m.Unlock()
		k.mu.Lock()
		if m.refs--; m.refs == 0 {
			delete(k.locks, name)
		}
		k.mu.Unlock()
	}
}
