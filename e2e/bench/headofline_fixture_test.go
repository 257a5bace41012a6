package bench

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// benchHelmRenderTimeout is rukpak's --helm-render-timeout in the benchmarks' environment (startOLM):
// the slow chart of BenchmarkOperatorsHeadOfLine hits it instead of the default 30 s.
const benchHelmRenderTimeout = 5 * time.Second

// slowChartLoop is the size of the two nested ranges of the slow chart's template: 15,000² = 2.25e8
// empty iterations, about 15 s of CPU for Helm's template engine on the 2-core machine these
// benchmarks were written on (68 ns each), three times benchHelmRenderTimeout. rukpak cannot stop a
// render it gave up on: it runs on to the end, on one CPU, so the loop is finite.
const slowChartLoop = 15000

// hugeBundleBytes is the size of the file of zeros in the huge bundle's extra layer: 64 MiB over
// rukpak's unpack limit (source.DefaultMaxBytes, 2 GiB after decompression; rukpak has no flag for
// it), so the unpack is refused, after rukpak has decompressed and written 2 GiB. Zeros compress
// about 800:1, so the layer pushed is a few MB.
const hugeBundleBytes = source.DefaultMaxBytes + 64<<20

// brokenBundle is one of BenchmarkOperatorsHeadOfLine's broken packages: one bundle, in a catalog of
// their own.
type brokenBundle struct {
	// what names the failure in the benchmark's table; unit is its metric.
	what, unit string
	pkg        string
	// entry is its FBC: package, channel and bundle.
	entry string
}

// brokenFixture is the three broken packages, their catalog image and the stalling registry.
type brokenFixture struct {
	prefix     string
	bundles    []brokenBundle
	catalogRef string
	stall      *stallingRegistry
}

func (f brokenFixture) names() []string {
	var out []string
	for _, bb := range f.bundles {
		out = append(out, bb.pkg)
	}
	return out
}

// pushBrokenOperators starts a stalling registry and pushes, to the environment's registry, a slow
// Helm chart, a huge registry+v1 bundle and a catalog image naming them and stalled packages whose
// bundle image is on the stalling registry. Close the stalling registry (f.stall.Close) when done.
func pushBrokenOperators(ctx context.Context, b *testing.B, prefix string, stalled int) brokenFixture {
	b.Helper()
	stall, err := startStallingRegistry()
	if err != nil {
		b.Fatal(err)
	}
	f := brokenFixture{prefix: prefix, stall: stall, catalogRef: fmt.Sprintf("%s/catalogs/%s-index:v1", olm.env.Registry.Addr, prefix)}
	tmp := b.TempDir()
	reg := olm.env.Registry.Addr

	for i := 0; i < stalled; i++ {
		pkg, unit := prefix+"-stalled-registry", "stalled-registry-report-s"
		if stalled > 1 {
			pkg, unit = fmt.Sprintf("%s-%d", pkg, i), fmt.Sprintf("stalled-registry-%d-report-s", i)
		}
		f.bundles = append(f.bundles, brokenBundle{what: "registry accepts, never answers", unit: unit, pkg: pkg,
			entry: brokenEntry(pkg, benchBundle(pkg, "1.0.0", fmt.Sprintf("%s/bundles/%s:1.0.0", stall.Addr(), pkg)))})
	}

	slow := prefix + "-slow-helm-render"
	chartRef := fmt.Sprintf("%s/charts/%s:1.0.0", reg, slow)
	if err := pushSlowChart(ctx, filepath.Join(tmp, "chart"), slow, chartRef); err != nil {
		b.Fatal(err)
	}
	f.bundles = append(f.bundles, brokenBundle{what: "Helm render past the time limit", unit: "slow-helm-report-s", pkg: slow,
		entry: brokenEntry(slow, fmt.Sprintf(`{"schema":"olm.bundle","package":%q,"name":"%s.v1.0.0","image":%q,"properties":[`+
			`{"type":"olm.package","value":{"packageName":%q,"version":"1.0.0"}},{"type":"olm.bundle.mediatype","value":"helm"}]}`+"\n",
			slow, slow, chartRef, slow))})

	huge := prefix + "-huge-unpack"
	hugeRef := fmt.Sprintf("%s/bundles/%s:1.0.0", reg, huge)
	if err := pushHugeBundle(ctx, hugeRef); err != nil {
		b.Fatal(err)
	}
	f.bundles = append(f.bundles, brokenBundle{what: "unpack over the size limit", unit: "huge-unpack-report-s", pkg: huge,
		entry: brokenEntry(huge, benchBundle(huge, "1.0.0", hugeRef))})

	var fbc strings.Builder
	for _, bb := range f.bundles {
		fbc.WriteString(bb.entry)
	}
	dir := filepath.Join(tmp, "catalog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(fbc.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	img, err := imagebuild.CatalogImage(dir)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := imagebuild.Push(ctx, img, f.catalogRef, imagebuild.WithInsecure()); err != nil {
		b.Fatal(err)
	}
	return f
}

// brokenEntry is the package and channel of pkg, then its one bundle.
func brokenEntry(pkg, bundle string) string {
	return fmt.Sprintf(`{"schema":"olm.package","name":%q,"defaultChannel":"stable"}`+"\n", pkg) +
		fmt.Sprintf(`{"schema":"olm.channel","package":%q,"name":"stable","entries":[{"name":"%s.v1.0.0"}]}`+"\n", pkg, pkg) + bundle
}

// pushSlowChart writes a chart whose template ranges slowChartLoop² times before rendering one
// ConfigMap, and pushes it as a Helm OCI artifact to ref.
func pushSlowChart(ctx context.Context, dir, name, ref string) error {
	files := map[string]string{
		"Chart.yaml": fmt.Sprintf("apiVersion: v2\nname: %s\nversion: 1.0.0\n", name),
		filepath.Join("templates", "configmap.yaml"): fmt.Sprintf(`{{- range $i := until %d }}{{- range $j := until %d }}{{- end }}{{- end }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-slow
data:
  rendered: "yes"
`, slowChartLoop, slowChartLoop),
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	img, err := imagebuild.HelmChartArtifact(dir)
	if err != nil {
		return err
	}
	_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
	return err
}

// pushHugeBundle pushes to ref example-operator's registry+v1 bundle 0.1.0 (as it is: the unpack is
// refused before anything reads its package) with a second layer holding huge/zeros, a file of
// hugeBundleBytes zeros.
func pushHugeBundle(ctx context.Context, ref string) error {
	base, err := imagebuild.RegistryV1BundleImage(filepath.Join(repoRoot(), "e2e", "testdata", "example-operator", "bundles", "0.1.0"))
	if err != nil {
		return err
	}
	layer, err := zerosLayer("huge/zeros", hugeBundleBytes)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return err
	}
	_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
	return err
}

// gzipLayer is an image layer held compressed in memory, with its digests computed once.
type gzipLayer struct {
	gz             []byte
	digest, diffID v1.Hash
}

// zerosLayer is a gzip-compressed tar layer of one file, name, of size zero bytes.
func zerosLayer(name string, size int64) (*gzipLayer, error) {
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	diff := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(zw, diff))
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
		return nil, err
	}
	zeros := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(zeros)) {
		if _, err := tw.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(gz.Bytes())
	return &gzipLayer{
		gz:     gz.Bytes(),
		digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])},
		diffID: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(diff.Sum(nil))},
	}, nil
}

func (l *gzipLayer) Digest() (v1.Hash, error) { return l.digest, nil }
func (l *gzipLayer) DiffID() (v1.Hash, error) { return l.diffID, nil }
func (l *gzipLayer) Size() (int64, error)     { return int64(len(l.gz)), nil }
func (l *gzipLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.gz)), nil
}
func (l *gzipLayer) Uncompressed() (io.ReadCloser, error) {
	return gzip.NewReader(bytes.NewReader(l.gz))
}
func (l *gzipLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }

// stallingRegistry is a "registry" on 127.0.0.1 that accepts every TCP connection and never reads
// from it or answers: a registry that hangs.
type stallingRegistry struct {
	ln       net.Listener
	mu       sync.Mutex
	conns    []net.Conn
	accepted int
	done     chan struct{}
}

// startStallingRegistry listens on a free loopback port.
func startStallingRegistry() (*stallingRegistry, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &stallingRegistry{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.accepted++
			s.mu.Unlock()
		}
	}()
	return s, nil
}

// Addr is host:port of the listener.
func (s *stallingRegistry) Addr() string { return s.ln.Addr().String() }

// Accepted is how many connections it has accepted.
func (s *stallingRegistry) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// Close stops listening and closes every connection it accepted (a client waiting on one then
// sees it end).
func (s *stallingRegistry) Close() {
	_ = s.ln.Close()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
}
