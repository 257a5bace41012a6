// Package images builds the container images of the three OLM v1 controllers without Docker: each is
// one layer on an empty base holding the static binary, a minimal /etc/passwd and /etc/group with the
// non-root user 65532 the chart runs as, and (optionally) a CA bundle for pulling from registries over
// HTTPS. Builds are reproducible: the same binary gives the same digest.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// Names are the controller binaries, one image each.
var Names = []string{"catalogd", "rukpak", "operator-controller"}

const (
	// UID and GID of the non-root user the images run as.
	UID = 65532
	// BinDir is where the binary goes; the entrypoint is BinDir/<name>.
	BinDir = "/usr/local/bin"
	// CABundlePath is where Options.CABundle is copied (Go's crypto/x509 reads it on Linux).
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
)

// Options of Build.
type Options struct {
	// CABundle is a PEM file copied into the image (empty: none, only plain-HTTP or insecure pulls
	// would work from inside the container).
	CABundle string
}

// DefaultCABundle is the host's CA bundle when it has one at the usual Debian/Alpine place.
func DefaultCABundle() string {
	if _, err := os.Stat(CABundlePath); err == nil {
		return CABundlePath
	}
	return ""
}

// Build makes the image of controller name from the static binary at binPath.
func Build(name, binPath string, o Options) (v1.Image, error) {
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return nil, fmt.Errorf("reading the %s binary (run `make build` first): %w", name, err)
	}
	files := []file{
		{path: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID))},
		{path: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID))},
		{path: "home/nonroot", dir: true, mode: 0o700, uid: UID},
		{path: "tmp", dir: true, mode: 0o1777},
		{path: BinDir[1:] + "/" + name, mode: 0o755, data: bin},
	}
	if o.CABundle != "" {
		ca, err := os.ReadFile(o.CABundle)
		if err != nil {
			return nil, fmt.Errorf("reading the CA bundle: %w", err)
		}
		files = append(files, file{path: CABundlePath[1:], mode: 0o644, data: ca})
	}
	layerBytes, err := tarFiles(files)
	if err != nil {
		return nil, err
	}
	return FromLayer(layerBytes, func(c *v1.Config) {
		c.Entrypoint = []string{BinDir + "/" + name}
		c.User = fmt.Sprintf("%d:%d", UID, UID)
		c.WorkingDir = "/"
		c.Env = []string{"PATH=" + BinDir, "HOME=/home/nonroot"}
		c.Labels = map[string]string{
			"org.opencontainers.image.title":  name,
			"org.opencontainers.image.source": "https://github.com/olmv1/olmv1",
		}
	})
}

// FromLayer makes a linux OCI image of one uncompressed tar layer, created at the epoch (so that the
// digest depends on the contents only), its runtime configuration set by configure.
func FromLayer(layerTar []byte, configure func(*v1.Config)) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	configure(&cf.Config)
	return mutate.ConfigFile(img, cf)
}

type file struct {
	path string
	dir  bool
	mode int64
	uid  int
	data []byte
}

// tarFiles writes files (and their parent directories) with fixed times and root ownership unless
// a uid is given, so that the layer depends only on the contents.
func tarFiles(files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	epoch := time.Unix(0, 0).UTC()
	for _, f := range files {
		var parents []string
		for d := filepath.Dir(f.path); d != "."; d = filepath.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if seen[d] {
				continue
			}
			seen[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		}
		h := &tar.Header{Name: f.path, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: epoch, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, f.path+"/"
			seen[f.path] = true
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Ref is the reference of controller name under registry, e.g. 127.0.0.1:5000/olmv1/catalogd:dev.
func Ref(registry, name, tag string) string {
	return fmt.Sprintf("%s/%s:%s", registry, name, tag)
}

// BuildAll builds the three images from binDir.
func BuildAll(binDir string, o Options) (map[string]v1.Image, error) {
	out := map[string]v1.Image{}
	for _, n := range Names {
		img, err := Build(n, filepath.Join(binDir, n), o)
		if err != nil {
			return nil, err
		}
		out[n] = img
	}
	return out, nil
}

// Push pushes img to ref and returns its digest reference (repo@sha256:...). insecure talks plain
// HTTP (loopback registries get plain HTTP anyway).
func Push(ctx context.Context, img v1.Image, ref string, insecure bool) (name.Digest, error) {
	var opts []imagebuild.PushOption
	if insecure {
		opts = append(opts, imagebuild.WithInsecure())
	}
	return imagebuild.Push(ctx, img, ref, opts...)
}

// PushAll pushes imgs to registry with tag and returns each digest reference.
func PushAll(ctx context.Context, imgs map[string]v1.Image, registry, tag string, insecure bool) (map[string]name.Digest, error) {
	out := map[string]name.Digest{}
	for _, n := range Names {
		d, err := Push(ctx, imgs[n], Ref(registry, n, tag), insecure)
		if err != nil {
			return nil, err
		}
		out[n] = d
	}
	return out, nil
}

// WriteArchive writes img as a docker-format tarball tagged ref (what `kind load image-archive` and
// `docker load` read).
func WriteArchive(img v1.Image, ref, path string) error {
	t, err := name.NewTag(ref, name.WeakValidation)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := tarball.WriteToFile(path, t, img); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteArchives writes one archive per image into dir (<name>.tar, tagged registry/name:tag).
func WriteArchives(imgs map[string]v1.Image, dir, registry, tag string) ([]string, error) {
	var paths []string
	for _, n := range Names {
		p := filepath.Join(dir, n+".tar")
		if err := WriteArchive(imgs[n], Ref(registry, n, tag), p); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}
