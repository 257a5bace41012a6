// Package pull pulls an image into a local directory: how bundle render, catalog add-bundle, catalog
// graph and the previews read bundle and catalog images.
package pull

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// ToDir pulls an image and writes its flattened filesystem (regular files and directories) to
// a new temporary directory; remove deletes it.
func ToDir(ctx context.Context, ref string, insecure bool) (dir string, remove func(), err error) {
	var nameOpts []name.Option
	if insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nameOpts...)
	if err != nil {
		return "", nil, fmt.Errorf("image reference %q: %w", ref, err)
	}
	img, err := remote.Image(r, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return "", nil, fmt.Errorf("pull %s: %w (check the reference and `docker login`; use --insecure for a plain-HTTP registry)", ref, err)
	}
	dir, err = os.MkdirTemp("", "kubectl-olmv1-")
	if err != nil {
		return "", nil, err
	}
	remove = func() { _ = os.RemoveAll(dir) }
	rc := mutate.Extract(img)
	defer rc.Close()
	if err := untar(rc, dir); err != nil {
		remove()
		return "", nil, fmt.Errorf("pull %s: %w", ref, err)
	}
	return dir, remove, nil
}

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
		clean := path.Clean("/" + h.Name)[1:]
		if clean == "" || strings.HasPrefix(clean, "..") {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(clean))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, tr); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
	}
}
