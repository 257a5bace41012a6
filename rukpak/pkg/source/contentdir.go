package source

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// contentDir writes the files of one unpack into a directory and refuses anything that would land
// outside it. Every write goes through an os.Root, so even a path that slips past the checks below
// cannot leave the directory; the checks exist to give clear errors. Symlinks are verified twice:
// lexically when created, and by resolving them on disk once everything is written (a chain of
// links that each look harmless can still point outside).
type contentDir struct {
	root   *os.Root
	limits Limits
	// what names the source in messages, e.g. `image "quay.io/x:1"`.
	what string
	// absRoot says how absolute symlink targets are read. When nil they are refused; otherwise they
	// are relative to the source's root (an image's /), and *absRoot is the directory of that root
	// that the content directory holds ("" for all of it).
	absRoot *string

	bytes    int64
	entries  int
	symlinks []string
	buf      []byte
}

func openContentDir(dir string, limits Limits, what string) (*contentDir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, newError(KindInternal, err, "creating content directory: %v", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, newError(KindInternal, err, "opening content directory: %v", err)
	}
	return &contentDir{root: root, limits: limits.withDefaults(), what: what}, nil
}

func (c *contentDir) close() error { return c.root.Close() }

func (c *contentDir) invalid(format string, args ...any) *Error {
	return newError(KindInvalidContent, nil, "%s: %s", c.what, fmt.Sprintf(format, args...))
}

// cleanEntryName validates a slash-separated name from an archive, a repository or a ConfigMap and
// returns it cleaned, relative, without a trailing slash ("" for the root itself).
func cleanEntryName(name string) (string, error) {
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("entry %q contains a NUL byte", name)
	}
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("entry %q has an absolute path", name)
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return "", fmt.Errorf("entry %q contains a '..' element", name)
		}
	}
	clean := path.Clean(name)
	if clean == "." {
		return "", nil
	}
	return clean, nil
}

func (c *contentDir) countEntry(name string) error {
	c.entries++
	if c.entries > c.limits.MaxFiles {
		return newError(KindTooLarge, nil, "%s: more than %d files and directories (at %q); the content is too large to unpack",
			c.what, c.limits.MaxFiles, name)
	}
	return nil
}

// clear removes whatever exists at name unless it is a directory and keepDir is true.
func (c *contentDir) clear(name string, keepDir bool) error {
	fi, err := c.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return c.writeErr(name, err)
	}
	if fi.IsDir() && keepDir {
		return nil
	}
	if err := c.root.RemoveAll(name); err != nil {
		return c.writeErr(name, err)
	}
	return nil
}

func (c *contentDir) writeErr(name string, err error) *Error {
	if strings.Contains(err.Error(), "path escapes") {
		return newError(KindInvalidContent, err, "%s: entry %q would be written outside the content directory (through a symlink): %v", c.what, name, err)
	}
	return newError(KindInternal, err, "%s: writing %q: %v", c.what, name, err)
}

func (c *contentDir) mkdirParents(name string) error {
	if dir := path.Dir(name); dir != "." {
		if err := c.root.MkdirAll(dir, 0o755); err != nil {
			return c.writeErr(name, err)
		}
	}
	return nil
}

// mkdir creates directory name (a cleaned relative name), replacing a non-directory at that path.
func (c *contentDir) mkdir(name string) error {
	if name == "" {
		return nil
	}
	if err := c.countEntry(name); err != nil {
		return err
	}
	if err := c.clear(name, true); err != nil {
		return err
	}
	if err := c.root.MkdirAll(name, 0o755); err != nil {
		return c.writeErr(name, err)
	}
	return nil
}

// writeFile writes the content of r to name, replacing whatever is there. Files get mode 0644, or
// 0755 when mode has any execute bit.
func (c *contentDir) writeFile(name string, r io.Reader, mode fs.FileMode) error {
	if name == "" {
		return c.invalid("a file entry has an empty name")
	}
	if err := c.countEntry(name); err != nil {
		return err
	}
	if err := c.mkdirParents(name); err != nil {
		return err
	}
	if err := c.clear(name, false); err != nil {
		return err
	}
	perm := fs.FileMode(0o644)
	if mode&0o111 != 0 {
		perm = 0o755
	}
	f, err := c.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return c.writeErr(name, err)
	}
	remaining := c.limits.MaxBytes - c.bytes
	if c.buf == nil {
		c.buf = make([]byte, 64<<10)
	}
	// Hide (*os.File).ReadFrom, which would allocate a buffer per file.
	n, err := io.CopyBuffer(struct{ io.Writer }{f}, io.LimitReader(r, remaining+1), c.buf)
	c.bytes += n
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if n > remaining {
		return c.tooLarge()
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return e
		}
		return newError(KindUnreachable, err, "%s: reading %q: %v", c.what, name, err)
	}
	return nil
}

func (c *contentDir) tooLarge() *Error {
	return newError(KindTooLarge, nil, "%s: content is larger than %s, the limit for one unpack; the source is too large or is a decompression bomb",
		c.what, formatBytes(c.limits.MaxBytes))
}

// symlink creates name pointing to target, after checking that target stays inside the directory.
func (c *contentDir) symlink(name, target string) error {
	if name == "" {
		return c.invalid("a symlink entry has an empty name")
	}
	if target == "" {
		return c.invalid("symlink %q has an empty target", name)
	}
	if path.IsAbs(target) {
		if c.absRoot == nil {
			return c.invalid("symlink %q points to the absolute path %q; only relative links inside the content are allowed", name, target)
		}
		abs := strings.TrimPrefix(path.Clean(target), "/")
		rel, ok := stripDirPrefix(abs, *c.absRoot)
		if !ok {
			return c.invalid("symlink %q points to %q, outside of /%s", name, target, *c.absRoot)
		}
		if rel == "" {
			rel = "."
		}
		// Rewrite as a relative link from the symlink's directory.
		target = relativeTo(path.Dir(name), rel)
	}
	resolved := path.Join(path.Dir(name), target)
	if resolved == ".." || strings.HasPrefix(resolved, "../") {
		return c.invalid("symlink %q points to %q, outside of the content directory", name, target)
	}
	if err := c.countEntry(name); err != nil {
		return err
	}
	if err := c.mkdirParents(name); err != nil {
		return err
	}
	if err := c.clear(name, false); err != nil {
		return err
	}
	if err := c.root.Symlink(target, name); err != nil {
		return c.writeErr(name, err)
	}
	c.symlinks = append(c.symlinks, name)
	return nil
}

// hardlink creates name as a hard link to target, an existing regular file of this content.
func (c *contentDir) hardlink(name, target string) error {
	if name == "" || target == "" {
		return c.invalid("hardlink %q -> %q has an empty name", name, target)
	}
	fi, err := c.root.Lstat(target)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return c.invalid("hardlink %q points to %q, which is not a file of the content", name, target)
		}
		return c.writeErr(target, err)
	}
	if !fi.Mode().IsRegular() {
		return c.invalid("hardlink %q points to %q, which is not a regular file", name, target)
	}
	if err := c.countEntry(name); err != nil {
		return err
	}
	if err := c.mkdirParents(name); err != nil {
		return err
	}
	if err := c.clear(name, false); err != nil {
		return err
	}
	if err := c.root.Link(target, name); err != nil {
		return c.writeErr(name, err)
	}
	return nil
}

// finish verifies, on disk, that every symlink created resolves inside the directory.
func (c *contentDir) finish() error {
	for _, link := range c.symlinks {
		if _, err := c.root.Lstat(link); errors.Is(err, fs.ErrNotExist) {
			continue // removed by a later entry or whiteout
		}
		if err := c.resolveInside(link); err != nil {
			return c.invalid("symlink %q %v", link, err)
		}
	}
	return nil
}

// resolveInside follows name component by component, reading symlinks inside the root, and fails
// when the path leaves the root or loops. Missing components are taken literally.
func (c *contentDir) resolveInside(name string) error {
	var resolved []string
	todo := strings.Split(name, "/")
	hops := 0
	for len(todo) > 0 {
		el := todo[0]
		todo = todo[1:]
		switch el {
		case "", ".":
			continue
		case "..":
			if len(resolved) == 0 {
				return errors.New("resolves to a path outside of the content directory")
			}
			resolved = resolved[:len(resolved)-1]
			continue
		}
		cur := path.Join(append(append([]string{}, resolved...), el)...)
		fi, err := c.root.Lstat(cur)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			resolved = append(resolved, el)
			continue
		}
		if hops++; hops > 40 {
			return errors.New("is part of a symlink loop")
		}
		target, err := c.root.Readlink(cur)
		if err != nil {
			return err
		}
		if path.IsAbs(target) {
			return errors.New("resolves through an absolute symlink")
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return nil
}

// stripDirPrefix returns name relative to dir when name is dir or inside it.
func stripDirPrefix(name, dir string) (string, bool) {
	switch {
	case dir == "":
		return name, true
	case name == dir:
		return "", true
	case strings.HasPrefix(name, dir+"/"):
		return name[len(dir)+1:], true
	}
	return "", false
}

// relativeTo returns the relative path from directory from to target (both cleaned, relative).
func relativeTo(from, target string) string {
	if from == "." {
		from = ""
	}
	var fromEls, toEls []string
	if from != "" {
		fromEls = strings.Split(from, "/")
	}
	if target != "." && target != "" {
		toEls = strings.Split(target, "/")
	}
	i := 0
	for i < len(fromEls) && i < len(toEls) && fromEls[i] == toEls[i] {
		i++
	}
	var out []string
	for range fromEls[i:] {
		out = append(out, "..")
	}
	out = append(out, toEls[i:]...)
	if len(out) == 0 {
		return "."
	}
	return strings.Join(out, "/")
}

func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
