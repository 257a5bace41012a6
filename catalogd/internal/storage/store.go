// Package storage keeps the served content of every Catalog on disk and answers queries over it.
//
// Layout under the root directory:
//
//	<root>/<catalog>/<hash-hex>/all.json    the canonical stream (one JSON blob per line, see fbc)
//	<root>/<catalog>/<hash-hex>/index.json  schema/package/name and byte range of every blob
//	<root>/<catalog>/current                symlink to <hash-hex>: the served content
//
// Put writes a new content directory next to the served one and then swaps the current symlink
// with a rename, so a reader sees either the old content or the new one, never a mix, and a failed
// Put leaves the served content untouched. Only the small index lives in memory; blobs are read
// from disk when asked for, so serving many large catalogs costs little heap.
//
// Readers that need to follow changes (the HTTP endpoint, the CatalogMetadata API) call Subscribe
// and get an Event each time a catalog's served content is replaced or removed.
package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/olmv1/olmv1/catalogd/internal/fbc"
)

const (
	tmpDir      = ".tmp"
	allFile     = "all.json"
	indexFile   = "index.json"
	currentLink = "current"
)

// Entry locates one blob inside all.json (schema, package, name, offset, length).
type Entry = fbc.Entry

// indexDoc is the on-disk form of index.json.
type indexDoc struct {
	Catalog  string     `json:"catalog"`
	Hash     string     `json:"hash"`
	Counts   fbc.Counts `json:"counts"`
	Size     int64      `json:"size"`
	Modified time.Time  `json:"modified"`
	Entries  []Entry    `json:"entries"`
}

// Content is the served, immutable content of one catalog. It stays readable after it has been
// replaced (open files survive the removal of their directory on POSIX systems), so a reader that
// got a Content may finish streaming it.
type Content struct {
	Catalog  string
	Hash     string
	Counts   fbc.Counts
	Size     int64
	Modified time.Time

	dir     string
	entries []Entry
	// byKey indexes entries by schema, package and name ("" keys included), so a query touches only
	// the matching entries.
	bySchema  map[string][]int
	byPackage map[string][]int
	byName    map[string][]int
}

// EventType says what happened to a catalog's content.
type EventType string

const (
	// EventPut: the catalog's served content was replaced (or served for the first time).
	EventPut EventType = "Put"
	// EventDelete: the catalog's content was removed.
	EventDelete EventType = "Delete"
)

// Event notifies a subscriber of a content change. Old is nil for a first Put; New is nil on delete.
type Event struct {
	Type     EventType
	Catalog  string
	Old, New *Content
}

// Store is the on-disk content store. It is safe for concurrent use.
type Store struct {
	root string
	// Dropped says, for each catalog whose stored content New found damaged and removed, what was
	// wrong (the caller logs it); that catalog is unpacked again.
	Dropped []string

	mu       sync.RWMutex
	contents map[string]*Content
	subs     map[int]chan<- Event
	nextSub  int
}

// New opens (creating if needed) the store at root and loads the content already served there, so
// a restarted catalogd serves what it served before.
func New(root string) (*Store, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("creating the storage directory %s (set --storage-dir to a writable directory): %w", root, err)
	}
	s := &Store{root: root, contents: map[string]*Content{}, subs: map[int]chan<- Event{}}
	_ = os.RemoveAll(filepath.Join(root, tmpDir)) // what a crash left in TempDir
	dirs, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		catDir := filepath.Join(root, d.Name())
		target, err := os.Readlink(filepath.Join(catDir, currentLink))
		if err != nil {
			continue // never completed a Put: nothing served
		}
		// Drop what a Put interrupted by a crash left behind.
		removeExcept(catDir, target)
		c, err := loadContent(filepath.Join(root, d.Name(), target))
		if err != nil {
			// Damaged content (a crash in an older catalogd's Delete, a disk error) is not served:
			// it is removed, and the catalog is unpacked again like one never stored.
			s.Dropped = append(s.Dropped, fmt.Sprintf("catalog %q: %v", d.Name(), err))
			if rmErr := os.RemoveAll(catDir); rmErr != nil {
				return nil, fmt.Errorf("removing the damaged stored content of catalog %q: %w (remove %s by hand)", d.Name(), rmErr, catDir)
			}
			continue
		}
		s.contents[d.Name()] = c
	}
	return s, nil
}

// TempDir returns (creating it) a directory on the store's volume for temporary files, such as the
// blobs fbc.Load spills while it parses a catalog. It is emptied when the store is opened; it is
// never a catalog's directory (catalog names do not start with a dot).
func (s *Store) TempDir() (string, error) {
	dir := filepath.Join(s.root, tmpDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating the temporary directory of the store: %w", err)
	}
	return dir, nil
}

// Root is the directory the store lives in.
func (s *Store) Root() string { return s.root }

// Get returns the served content of catalog, if any.
func (s *Store) Get(catalog string) (*Content, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.contents[catalog]
	return c, ok
}

// List returns the served content of every catalog.
func (s *Store) List() []*Content {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*Content, 0, len(s.contents))
	for _, c := range s.contents {
		out = append(out, c)
	}
	return out
}

// Subscribe registers ch for every later Event. Sends never block: a subscriber that does not keep
// up misses events (it can always re-read with List/Get). The returned function unsubscribes.
func (s *Store) Subscribe(ch chan<- Event) (cancel func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextSub
	s.nextSub++
	s.subs[id] = ch
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.subs, id)
	}
}

func (s *Store) notifyLocked(ev Event) {
	for _, ch := range s.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

// Put stores cat as the served content of catalog and swaps it in atomically. Putting the content
// that is already served (same hash) does nothing and returns it.
func (s *Store) Put(catalog string, cat *fbc.Catalog) (*Content, error) {
	if err := validName(catalog); err != nil {
		return nil, err
	}
	hashHex := strings.TrimPrefix(cat.Hash, "sha256:")
	if cur, ok := s.Get(catalog); ok && cur.Hash == cat.Hash {
		return cur, nil
	}
	catDir := filepath.Join(s.root, catalog)
	if err := os.MkdirAll(catDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(catDir, ".put-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	doc, err := writeContent(tmp, catalog, cat)
	if err != nil {
		return nil, fmt.Errorf("writing the content of catalog %q to %s: %w", catalog, tmp, err)
	}
	final := filepath.Join(catDir, hashHex)
	_ = os.RemoveAll(final) // left over from a crash before the link swap
	if err := os.Rename(tmp, final); err != nil {
		return nil, err
	}
	link := filepath.Join(catDir, ".current-tmp")
	_ = os.Remove(link)
	if err := os.Symlink(hashHex, link); err != nil {
		return nil, err
	}
	if err := os.Rename(link, filepath.Join(catDir, currentLink)); err != nil {
		return nil, err
	}
	c := newContent(final, doc)

	s.mu.Lock()
	old := s.contents[catalog]
	s.contents[catalog] = c
	s.notifyLocked(Event{Type: EventPut, Catalog: catalog, Old: old, New: c})
	s.mu.Unlock()

	// Remove every other content directory of this catalog (open readers keep their files).
	removeExcept(catDir, hashHex)
	return c, nil
}

// Delete removes everything stored for catalog.
func (s *Store) Delete(catalog string) error {
	if err := validName(catalog); err != nil {
		return err
	}
	// Unpublish first: a crash in the middle of RemoveAll must not leave the current link pointing
	// at a half-removed content directory.
	catDir := filepath.Join(s.root, catalog)
	if err := os.Remove(filepath.Join(catDir, currentLink)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the stored content of catalog %q: %w", catalog, err)
	}
	if err := os.RemoveAll(catDir); err != nil {
		return fmt.Errorf("removing the stored content of catalog %q: %w", catalog, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.contents[catalog]; ok {
		delete(s.contents, catalog)
		s.notifyLocked(Event{Type: EventDelete, Catalog: catalog, Old: old})
	}
	return nil
}

func validName(catalog string) error {
	if catalog == "" || catalog == "." || catalog == ".." || strings.ContainsAny(catalog, `/\`) || strings.HasPrefix(catalog, ".") {
		return fmt.Errorf("invalid catalog name %q", catalog)
	}
	return nil
}

func removeExcept(catDir, keep string) {
	ds, err := os.ReadDir(catDir)
	if err != nil {
		return
	}
	for _, d := range ds {
		if d.Name() != keep && d.Name() != currentLink {
			_ = os.RemoveAll(filepath.Join(catDir, d.Name()))
		}
	}
}

// writeContent writes all.json and index.json into dir and syncs them.
func writeContent(dir, catalog string, cat *fbc.Catalog) (*indexDoc, error) {
	f, err := os.Create(filepath.Join(dir, allFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The catalog's entries already hold the offsets of its canonical stream, which is streamed
	// from its spill file: nothing of the size of the catalog is in memory.
	doc := &indexDoc{Catalog: catalog, Hash: cat.Hash, Counts: cat.Counts, Size: cat.Size, Entries: cat.Entries}
	if n, err := cat.WriteTo(f); err != nil {
		return nil, err
	} else if n != cat.Size {
		return nil, fmt.Errorf("wrote %d bytes of %d", n, cat.Size)
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	doc.Modified = time.Now().UTC().Truncate(time.Second)
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if err := writeFileSync(filepath.Join(dir, indexFile), b); err != nil {
		return nil, err
	}
	return doc, nil
}

func writeFileSync(p string, b []byte) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func loadContent(dir string) (*Content, error) {
	b, err := os.ReadFile(filepath.Join(dir, indexFile))
	if err != nil {
		return nil, err
	}
	var doc indexDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, indexFile), err)
	}
	st, err := os.Stat(filepath.Join(dir, allFile))
	if err != nil {
		return nil, err
	}
	if st.Size() != doc.Size {
		return nil, fmt.Errorf("%s has %d bytes, its index says %d", filepath.Join(dir, allFile), st.Size(), doc.Size)
	}
	return newContent(dir, &doc), nil
}

func newContent(dir string, doc *indexDoc) *Content {
	c := &Content{
		Catalog: doc.Catalog, Hash: doc.Hash, Counts: doc.Counts, Size: doc.Size, Modified: doc.Modified,
		dir: dir, entries: doc.Entries,
		bySchema: map[string][]int{}, byPackage: map[string][]int{}, byName: map[string][]int{},
	}
	for i, e := range c.entries {
		c.bySchema[e.Schema] = append(c.bySchema[e.Schema], i)
		c.byPackage[packageOf(e)] = append(c.byPackage[packageOf(e)], i)
		c.byName[e.Name] = append(c.byName[e.Name], i)
	}
	return c
}

// packageOf is the package a blob belongs to: its package field, or its own name for olm.package.
func packageOf(e Entry) string {
	if e.Package == "" && e.Schema == "olm.package" {
		return e.Name
	}
	return e.Package
}

// Open opens all.json for reading. The caller closes it.
func (c *Content) Open() (*os.File, error) {
	f, err := os.Open(filepath.Join(c.dir, allFile))
	if err != nil {
		return nil, fmt.Errorf("catalog %q: content %s is gone: %w", c.Catalog, c.Hash, err)
	}
	return f, nil
}

// Entries returns every entry, in canonical order. The slice must not be modified.
func (c *Content) Entries() []Entry { return c.entries }

// Query selects the entries matching every non-empty filter, in canonical order. The package
// filter matches blobs of that package and the olm.package blob of that name.
func (c *Content) Query(schema, pkg, name string) []Entry {
	var lists [][]int
	if schema != "" {
		lists = append(lists, c.bySchema[schema])
	}
	if pkg != "" {
		lists = append(lists, c.byPackage[pkg])
	}
	if name != "" {
		lists = append(lists, c.byName[name])
	}
	if len(lists) == 0 {
		return c.entries
	}
	// Walk the shortest list and check the other filters on each of its entries.
	shortest := lists[0]
	for _, l := range lists[1:] {
		if len(l) < len(shortest) {
			shortest = l
		}
	}
	out := make([]Entry, 0, len(shortest))
	for _, i := range shortest {
		e := c.entries[i]
		if (schema == "" || e.Schema == schema) && (pkg == "" || packageOf(e) == pkg) && (name == "" || e.Name == name) {
			out = append(out, e)
		}
	}
	return out
}

// ReadBlob reads one entry's blob from f (an all.json opened with Open).
func ReadBlob(f io.ReaderAt, e Entry) ([]byte, error) {
	b := make([]byte, e.Length)
	if _, err := f.ReadAt(b, e.Offset); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// WriteEntries copies the given entries of f to w, one blob per line. Adjacent entries are copied in
// one read.
func WriteEntries(w io.Writer, f io.ReaderAt, entries []Entry) error {
	for i := 0; i < len(entries); {
		start := entries[i].Offset
		end := start + entries[i].Length + 1
		j := i + 1
		for j < len(entries) && entries[j].Offset == end {
			end += entries[j].Length + 1
			j++
		}
		if _, err := io.Copy(w, io.NewSectionReader(f, start, end-start)); err != nil {
			return err
		}
		i = j
	}
	return nil
}
