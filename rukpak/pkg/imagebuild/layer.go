package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// epoch is the time stamped on every archive entry and image config, so that builds are
// reproducible.
var epoch = time.Unix(0, 0).UTC()

// tarOptions tune writeTar.
type tarOptions struct {
	// prefix is prepended (as a directory) to every entry name, e.g. "configs". Empty for none.
	prefix string
	// filesOnly leaves directory entries out (Helm chart archives hold only files).
	filesOnly bool
}

// writeTar writes entries (as listed by walkTree) as a deterministic tar stream.
func writeTar(w io.Writer, entries []entry, opts tarOptions) error {
	tw := tar.NewWriter(w)
	if opts.prefix != "" && !opts.filesOnly {
		if err := tw.WriteHeader(dirHeader(opts.prefix)); err != nil {
			return err
		}
	}
	for _, e := range entries {
		name := e.rel
		if opts.prefix != "" {
			name = opts.prefix + "/" + e.rel
		}
		switch e.kind {
		case kindDir:
			if opts.filesOnly {
				continue
			}
			if err := tw.WriteHeader(dirHeader(name)); err != nil {
				return err
			}
		case kindSymlink:
			hdr := baseHeader(name, 0o777)
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = e.linkname
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
		case kindFile:
			if err := writeFile(tw, name, e); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

func writeFile(tw *tar.Writer, name string, e entry) error {
	perm := int64(0o644)
	if e.executable {
		perm = 0o755
	}
	hdr := baseHeader(name, perm)
	hdr.Typeflag = tar.TypeReg
	hdr.Size = e.size
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	f, err := os.Open(e.source)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.CopyN(tw, f, e.size)
	if err != nil {
		return fmt.Errorf("read %q: %w (did it change during the build? %d of %d bytes read)", e.rel, err, n, e.size)
	}
	return nil
}

func dirHeader(name string) *tar.Header {
	hdr := baseHeader(name+"/", 0o755)
	hdr.Typeflag = tar.TypeDir
	return hdr
}

func baseHeader(name string, mode int64) *tar.Header {
	return &tar.Header{
		Name:    name,
		Mode:    mode,
		ModTime: epoch,
		Uid:     0,
		Gid:     0,
	}
}

// gzipBytes compresses b with a header that carries no name and no time.
func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dirLayer archives a walked directory as one gzip-compressed OCI layer.
func dirLayer(entries []entry, opts tarOptions) (v1.Layer, error) {
	var tarBuf bytes.Buffer
	if err := writeTar(&tarBuf, entries, opts); err != nil {
		return nil, err
	}
	gz, err := gzipBytes(tarBuf.Bytes())
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// singleLayerImage assembles an OCI image of one layer with the given config labels.
// createdBy is recorded in the image history to say what built the layer.
func singleLayerImage(layer v1.Layer, labels map[string]string, createdBy string) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: epoch},
			CreatedBy: createdBy,
		},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: epoch}
	cfg.OS = "linux"
	cfg.Architecture = "amd64"
	cfg.Config.Labels = labels
	return mutate.ConfigFile(img, cfg)
}

// entriesImage is the common path of the catalog and bundle builders: archive walked entries
// under prefix and wrap them in a single-layer image.
func entriesImage(entries []entry, prefix string, labels map[string]string, createdBy string) (v1.Image, error) {
	layer, err := dirLayer(entries, tarOptions{prefix: prefix})
	if err != nil {
		return nil, err
	}
	return singleLayerImage(layer, labels, createdBy)
}
