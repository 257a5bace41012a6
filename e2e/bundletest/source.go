package bundletest

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/crane"

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
		s.Image = arg
		var err error
		if dir, err = t.pullToDir(ctx, arg, name); err != nil {
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
