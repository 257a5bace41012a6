package imagebuild

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// entryKind says how one entry of a source directory is archived.
type entryKind int

const (
	kindDir entryKind = iota
	kindFile
	kindSymlink
)

// entry is one file system object found under a source directory.
type entry struct {
	// rel is the slash-separated path relative to the source directory.
	rel  string
	kind entryKind
	// source is the absolute path that a file's content is read from (the link's target for a
	// dereferenced symlink).
	source string
	size   int64
	// executable is true when any execute bit is set on a regular file.
	executable bool
	// linkname is the relative target of a preserved symlink.
	linkname string
}

// walkOptions tune walkTree for one kind of archive.
type walkOptions struct {
	// dereference stores a symlink to a file as a copy of the file, and refuses symlinks to
	// directories; otherwise symlinks are kept as relative symlinks.
	dereference bool
	// ignore, when set, reports whether an entry (and, for a directory, everything below it) is
	// left out. Only .helmignore rules use it.
	ignore func(rel string, isDir bool) bool
}

// walkTree lists everything under root in lexical order (a directory before its content). It
// fails on anything it cannot archive faithfully: a symlink that leaves root or dangles, a symlink
// to a directory when dereferencing, and sockets, devices or pipes.
func walkTree(root string, opts walkOptions) ([]entry, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	realRoot, err = filepath.Abs(realRoot)
	if err != nil {
		return nil, err
	}

	var entries []entry
	err = filepath.WalkDir(realRoot, func(p string, d fs.DirEntry, walkErr error) error {
		if walkErr != nil {
			return walkErr
		}
		if p == realRoot {
			return nil
		}
		relOS, err := filepath.Rel(realRoot, p)
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(relOS)
		if opts.ignore != nil && opts.ignore(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}

		mode := d.Type()
		switch {
		case mode.IsDir():
			entries = append(entries, entry{rel: rel, kind: kindDir})
			return nil
		case mode.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			entries = append(entries, fileEntry(rel, p, info))
			return nil
		case mode&fs.ModeSymlink != 0:
			e, err := symlinkEntry(realRoot, rel, p, opts.dereference)
			if err != nil {
				return err
			}
			entries = append(entries, e)
			return nil
		default:
			return fmt.Errorf("%q is a %s; only regular files, directories and symlinks can be archived (remove it)", rel, describeMode(mode))
		}
	})
	if err != nil {
		return nil, err
	}
	return entries, nil
}

func fileEntry(rel, source string, info fs.FileInfo) entry {
	return entry{
		rel:        rel,
		kind:       kindFile,
		source:     source,
		size:       info.Size(),
		executable: info.Mode().Perm()&0o111 != 0,
	}
}

// symlinkEntry resolves the symlink at p (rel inside realRoot) and checks that it stays inside.
func symlinkEntry(realRoot, rel, p string, dereference bool) (entry, error) {
	target, err := os.Readlink(p)
	if err != nil {
		return entry{}, err
	}
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return entry{}, fmt.Errorf("symlink %q points to %q, which does not exist (fix or remove the link)", rel, target)
		}
		return entry{}, fmt.Errorf("symlink %q -> %q: %w", rel, target, err)
	}
	inside, err := filepath.Rel(realRoot, resolved)
	if err != nil || inside == ".." || strings.HasPrefix(inside, ".."+string(filepath.Separator)) || filepath.IsAbs(inside) {
		return entry{}, fmt.Errorf("symlink %q points to %q, outside the directory; links must stay inside it (replace the link with a copy of its target)", rel, target)
	}
	info, err := os.Stat(resolved)
	if err != nil {
		return entry{}, err
	}

	if dereference {
		if info.IsDir() {
			return entry{}, fmt.Errorf("symlink %q points to the directory %q; directory links are not followed in a chart (replace the link with a real directory)", rel, target)
		}
		if !info.Mode().IsRegular() {
			return entry{}, fmt.Errorf("symlink %q points to %q, a %s; only regular files can be archived", rel, target, describeMode(info.Mode().Type()))
		}
		return fileEntry(rel, resolved, info), nil
	}

	// Store the link relative to its own directory, so it resolves the same way inside the image
	// whatever prefix the tree is copied under.
	linkDir := filepath.Join(realRoot, filepath.FromSlash(path.Dir(rel)))
	linkname, err := filepath.Rel(linkDir, resolved)
	if err != nil {
		return entry{}, err
	}
	return entry{rel: rel, kind: kindSymlink, linkname: filepath.ToSlash(linkname)}, nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeIrregular != 0:
		return "irregular file"
	default:
		return fmt.Sprintf("file of mode %s", m)
	}
}

// requireDir returns an error unless p is an existing directory. what names the directory's role
// in the error, e.g. `bundle directory`.
func requireDir(what, p string) error {
	info, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %q not found", what, p)
	case err != nil:
		return fmt.Errorf("%s %q: %w", what, p, err)
	case !info.IsDir():
		return fmt.Errorf("%s %q is a file, not a directory", what, p)
	}
	return nil
}
