package bundletest

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/olmv1/olmv1/rukpak/pkg/bundlevalidate"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// source is a bundle of the test and where it came from.
type source struct {
	*Bundle
	// Arg is the directory or image the user named; Image is set when it is an image.
	Arg   string
	Image string
	// Ref is the bundle's reference in the throw-away registry (set by pushBundles).
	Ref string
}

// readBundle reads (and validates) the bundle under test.
func (t *tester) readBundle(ctx context.Context) (string, error) {
	s, err := t.readSource(ctx, t.o.Bundle, "bundle")
	if err != nil {
		return "", err
	}
	t.bundle = s
	return describeBundle(s.Bundle), nil
}

// readPrevious reads (and validates) the bundle of --upgrade-from.
func (t *tester) readPrevious(ctx context.Context) (string, error) {
	s, err := t.readSource(ctx, t.o.UpgradeFrom, "previous")
	if err != nil {
		return "", err
	}
	if s.Package != t.bundle.Package {
		return "", fmt.Errorf("--upgrade-from %s is package %s, the bundle under test is package %s: pass a previous version of the same package",
			t.o.UpgradeFrom, s.Package, t.bundle.Package)
	}
	if s.Version == t.bundle.Version {
		return "", fmt.Errorf("--upgrade-from %s has the same version %s as the bundle under test: pass an older version", t.o.UpgradeFrom, s.Version)
	}
	t.prev = s
	return describeBundle(s.Bundle), nil
}

func describeBundle(b *Bundle) string {
	return fmt.Sprintf("package %s, CSV %s, version %s, install modes %s, %d CRD(s), %d alm-example(s)",
		b.Package, b.Name, b.Version, strings.Join(b.InstallModes, ","), len(b.CRDs), len(b.Examples))
}

// readSource reads the bundle named by arg: a directory as it is, an image pulled into the scratch
// directory (as dir name). Either is validated with rukpak's bundle validation.
func (t *tester) readSource(ctx context.Context, arg, name string) (*source, error) {
	s := &source{Arg: arg}
	dir := arg
	if st, err := os.Stat(arg); err != nil || !st.IsDir() {
		if strings.HasPrefix(arg, ".") || strings.HasPrefix(arg, "/") {
			return nil, fmt.Errorf("%s is not a bundle directory: %v", arg, err)
		}
		s.Image, dir = arg, filepath.Join(t.work, name)
		if err := pullToDir(ctx, arg, dir, t.o.Insecure); err != nil {
			return nil, err
		}
	}
	r, err := bundlevalidate.Validate(dir)
	if err != nil {
		return nil, fmt.Errorf("validating %s: %w", arg, err)
	}
	if !r.Valid() {
		var lines []string
		for _, p := range r.Problems {
			if p.Level == bundlevalidate.LevelError {
				lines = append(lines, p.String())
			}
		}
		return nil, fmt.Errorf("bundle %s has %d error(s) (kubectl olmv1 bundle validate %s):\n%s", arg, r.Errors(), arg, strings.Join(lines, "\n"))
	}
	if s.Bundle, err = ReadBundle(dir); err != nil {
		return nil, err
	}
	return s, nil
}

// pushBundles puts the bundle under test and the previous one into the throw-away registry: a
// directory is built into an image as `kubectl olmv1 bundle push` builds it, an image is copied.
func (t *tester) pushBundles(ctx context.Context) (string, error) {
	var lines []string
	for _, s := range []*source{t.prev, t.bundle} {
		if s == nil {
			continue
		}
		s.Ref = fmt.Sprintf("%s/bundle-test/%s:%s", t.env.Registry.Addr, s.Package, s.Version)
		if err := t.pushSource(ctx, s); err != nil {
			return "", err
		}
		lines = append(lines, fmt.Sprintf("%s %s -> %s", s.Name, s.Arg, s.Ref))
	}
	return strings.Join(lines, "\n"), nil
}

func (t *tester) pushSource(ctx context.Context, s *source) error {
	if s.Image != "" {
		opts := []crane.Option{crane.WithContext(ctx)}
		if t.o.Insecure {
			opts = append(opts, crane.Insecure)
		}
		if err := crane.Copy(s.Image, s.Ref, opts...); err != nil {
			return fmt.Errorf("copying %s into the throw-away registry: %w", s.Image, err)
		}
		return nil
	}
	img, err := imagebuild.RegistryV1BundleImage(s.Dir)
	if err != nil {
		return fmt.Errorf("building the bundle image of %s: %w", s.Dir, err)
	}
	if _, err := imagebuild.Push(ctx, img, s.Ref, imagebuild.WithInsecure()); err != nil {
		return fmt.Errorf("pushing %s: %w", s.Ref, err)
	}
	return nil
}

// pullToDir pulls the image ref and writes its flattened filesystem (directories and regular files)
// into dir.
func pullToDir(ctx context.Context, ref, dir string, insecure bool) error {
	opts := []crane.Option{crane.WithContext(ctx)}
	if insecure {
		opts = append(opts, crane.Insecure)
	}
	img, err := crane.Pull(ref, opts...)
	if err != nil {
		return fmt.Errorf("pull %s: %w (check the reference and `docker login`; use --insecure for a plain-HTTP registry)", ref, err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	if err := untar(rc, dir); err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	return nil
}

// untar writes the directories and regular files of the tar stream r under dir, refusing paths
// that leave it; other entries (links, devices) are ignored.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(filepath.FromSlash(strings.TrimPrefix(h.Name, "/")))
		if name == "." {
			continue
		}
		if name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) || filepath.IsAbs(name) {
			return fmt.Errorf("image file %q is outside the image root", h.Name)
		}
		p := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			// A bundle or catalog image holds manifests: 1 GiB per file is far beyond any.
			_, err = io.Copy(f, io.LimitReader(tr, 1<<30))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
