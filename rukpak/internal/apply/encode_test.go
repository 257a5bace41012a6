package apply

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/release"
)

// testRelease is a release whose manifest is n objects of about 1 KB each.
func testRelease(name string, n int) *release.Release {
	var m strings.Builder
	for i := range n {
		fmt.Fprintf(&m, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%d\ndata:\n  v: %q\n", name, i, strings.Repeat(name, 1000/len(name)))
	}
	return &release.Release{Name: name, Namespace: "ns", Version: 1, Manifest: m.String(), Info: &release.Info{Status: release.StatusDeployed}}
}

// TestEncodeReleaseFromThePool: releases encoded at once, from several goroutines, with pooled
// writers are byte for byte what a new writer gives (Helm's encoding: base64 of gzipped JSON at
// BestCompression) and decode back.
func TestEncodeReleaseFromThePool(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				rls := testRelease(fmt.Sprintf("r%d-%d", g, i), 1+i%7)
				got, err := encodeRelease(rls)
				if err != nil {
					t.Error(err)
					return
				}
				j, _ := json.Marshal(rls)
				var b bytes.Buffer
				w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
				_, _ = w.Write(j)
				_ = w.Close()
				if want := base64.StdEncoding.EncodeToString(b.Bytes()); got != want {
					t.Errorf("release %s: encoded differently from a new gzip writer", rls.Name)
				}
				back, err := decodeRelease(got)
				if err != nil || back.Manifest != rls.Manifest {
					t.Errorf("release %s: does not decode back (%v)", rls.Name, err)
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkEncodeRelease: one release record of a small bundle (a few objects), as each revision
// write of an install or upgrade encodes it.
func BenchmarkEncodeRelease(b *testing.B) {
	rls := testRelease("bench", 4)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeRelease(rls); err != nil {
			b.Fatal(err)
		}
	}
}
