package fbc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/olmv1/olmv1/platform/sharedtestdata"
)

// The fuzz targets of this package (hack/fuzz.sh runs them; plain `go test` runs their seeds):
//
//   - FuzzWalkMatchesDeclcfg: on a file that operator-registry's walker accepts, walkMetas yields
//     the same canonical blobs; on any file, walkMetas and Load return (no panic, no hang).
//   - FuzzCanonicalize: canonicalize agrees with re-encoding through encoding/json, and the
//     fast path (isCanonical) never accepts a blob the encoder would write differently.
//   - FuzzMayHaveAliases (aliases_fuzz_test.go): the byte scan that lets documents without YAML
//     aliases skip the alias check never misses an alias.

// fuzzHangLimit bounds one input's walk. A real catalog file of a few KiB takes milliseconds; the
// bound is generous because fuzzing shares a loaded machine.
const fuzzHangLimit = 30 * time.Second

// fuzzSeedYAML exercises what the walkers must agree on: separators, comments, the case of the
// meta keys, YAML-only scalars (non-string keys, octal and hex numbers, timestamps), block scalars
// holding "---", HTML characters.
var fuzzSeedYAML = []string{
	"schema: olm.package\nname: foo\ndefaultChannel: stable\n",
	"---\nschema: olm.package\nname: foo\n--- \nschema: olm.channel\npackage: foo\nname: stable\nentries:\n- name: foo.v0.1.0\n- name: foo.v0.2.0\n  replaces: foo.v0.1.0\n",
	"schema: olm.bundle\npackage: foo\nname: foo.v0.1.0\nimage: example.com/foo:v0.1.0\nproperties:\n- type: olm.package\n  value: {packageName: foo, version: 0.1.0}\n",
	"Schema: example.custom\nPackage: foo\nName: odd\ndescription: \"<b>bold</b> & \\u2028 co\"\nnumbers: [1, 1.0, 1.5, -0, 1e3, 12345678901234567890, 0x1F, 010]\nkeys: {1: one, 2.5: two-and-a-half, true: yes, null-ish: ~}\nwhen: 2024-01-02\nmulti: |\n  ---\n  not a separator\nfolded: >\n  a\n  b\n",
	"# header\n---\nschema: olm.package\nname: foo\n---\n# trailer\n\n",
	"schema: olm.package\nname: [oops\n",
	"- a\n- b\n",
	"schema: olm.package\nName: a\nname: b\n",
	"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\nschema: olm.package\nname: alias\n",
	"a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\nschema: olm.package\nname: laughs\n",
	"",
}

// fuzzSeedJSON are JSON streams, the other form of FBC files.
var fuzzSeedJSON = []string{
	`{"name":"foo.v0.2.0","schema":"olm.bundle","package":"foo","properties":[{"value":{"version":"0.2.0","packageName":"foo"},"type":"olm.package"}],"image":"example.com/foo:v0.2.0"}
{"defaultChannel":"stable","name":"foo","schema":"olm.package"}
`,
	"{\n  \"schema\": \"olm.package\",\n  \"name\": \"foo\",\n  \"n\": 1.50,\n  \"big\": 123456789012345678901234567890\n}\n",
	`{"schema":"olm.package","name":"foo"}{"schema":`,
	`{"schema":"olm.package","name":"\u003cfoo\u003e","x":"\ud800"}`,
}

// fuzzSharedTestdata returns the file rel of the shared real test data ($OLMV1_TESTDATA, by default
// ../shared/testdata next to the repository root), or nil when it is absent: the fuzz targets still
// run on their built-in seeds.
func fuzzSharedTestdata(tb testing.TB, rel string) []byte {
	tb.Helper()
	root, ok := sharedtestdata.Root()
	if !ok {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		tb.Logf("fuzz seed %s not added: %v", rel, err)
		return nil
	}
	return data
}

// fuzzRealSeeds are a few small real FBC files (and the head of a large JSON one).
func fuzzRealSeeds(tb testing.TB) [][]byte {
	var out [][]byte
	for _, rel := range []string{
		"catalogs/community-v4.20/libredb-studio-operator/catalog.yaml",
		"catalogs/community-v4.20/kubevirt-wol/catalog.yaml",
		"fbc/deprecations-example/redhat-operator-index/4.15/example-mypackage/deprecations.yaml",
	} {
		if data := fuzzSharedTestdata(tb, rel); data != nil {
			out = append(out, data)
		}
	}
	// The descheduler catalog is 1.3 MB of indented JSON: its first two values are enough.
	if data := fuzzSharedTestdata(tb, "fbc/descheduler-json/cluster-kube-descheduler-operator/catalog.json"); data != nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		var raw json.RawMessage
		if dec.Decode(&raw) == nil && dec.Decode(&raw) == nil {
			out = append(out, data[:dec.InputOffset()])
		}
	}
	return out
}

// fuzzCollect runs a walker over root and returns the canonical blobs it yields, sorted.
func fuzzCollect(walk func(context.Context, fs.FS, func(string, *declcfg.Meta, error) error) error, root fs.FS) ([]Meta, error) {
	var (
		mu    sync.Mutex
		metas []Meta
	)
	err := walk(context.Background(), root, func(path string, m *declcfg.Meta, err error) error {
		if err != nil {
			return fmt.Errorf("file %s: %w", path, err)
		}
		cm, err := canonicalize(m)
		if err != nil {
			return err
		}
		cm.Blob = slices.Clone(cm.Blob) // walkMetas's m.Blob is its buffer
		mu.Lock()
		metas = append(metas, cm)
		mu.Unlock()
		return nil
	})
	slices.SortFunc(metas, compareMeta)
	return metas, err
}

// declcfgWalk is the reference: operator-registry's walker. A panic in it counts as a rejection.
func declcfgWalk(ctx context.Context, root fs.FS, fn func(string, *declcfg.Meta, error) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("declcfg.WalkMetasFS panicked: %v", r)
		}
	}()
	return declcfg.WalkMetasFS(ctx, root, fn)
}

// fuzzWatchdog panics (which fails the fuzz input) when stop is not called within fuzzHangLimit.
func fuzzWatchdog(what string) (stop func() bool) {
	return time.AfterFunc(fuzzHangLimit, func() {
		panic(fmt.Sprintf("%s did not return within %s: it hangs on this input", what, fuzzHangLimit))
	}).Stop
}

// declcfgDropsLastLine reports whether data ends with a line that operator-registry's walker drops
// silently: the Kubernetes YAML line reader (k8s.io/apimachinery/pkg/util/yaml.LineReader) loses a
// last line without a newline whose length is a multiple of its 4096-byte buffer.
func declcfgDropsLastLine(data []byte) bool {
	n := len(data) - (bytes.LastIndexByte(data, '\n') + 1)
	return n > 0 && n%4096 == 0
}

// FuzzWalkMatchesDeclcfg is a differential test of walkMetas against declcfg.WalkMetasFS on one
// catalog file of arbitrary bytes: where declcfg accepts the file, both yield the same canonical
// blobs; on any file, walkMetas and Load return (no panic, no hang), and Load yields the blobs of the
// walk or an InvalidError.
func FuzzWalkMatchesDeclcfg(f *testing.F) {
	for _, s := range fuzzSeedYAML {
		f.Add([]byte(s))
	}
	for _, s := range fuzzSeedJSON {
		f.Add([]byte(s))
	}
	for _, data := range fuzzRealSeeds(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		root := fstest.MapFS{"pkg/catalog.yaml": &fstest.MapFile{Data: data, Mode: 0o644}}

		stop := fuzzWatchdog("walkMetas")
		got, gotErr := fuzzCollect(walkMetas, root)
		stop()

		want, wantErr := fuzzCollect(declcfgWalk, root)
		// Where declcfg expands YAML aliases into more than ten times the document, walkMetas
		// refuses on purpose (see aliases.go); a document without aliases is never refused so.
		aliasRefusal := errors.Is(gotErr, errAliasExpansion) && mayHaveAliases(data)
		if wantErr == nil && !declcfgDropsLastLine(data) && !aliasRefusal {
			if gotErr != nil {
				t.Fatalf("declcfg accepts the file, walkMetas fails: %v", gotErr)
			}
			if len(got) != len(want) {
				t.Fatalf("walkMetas yields %d blobs, declcfg %d", len(got), len(want))
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.Schema != w.Schema || g.Package != w.Package || g.Name != w.Name || !bytes.Equal(g.Blob, w.Blob) {
					t.Fatalf("blob %d differs:\n got  %q %q %q %s\n want %q %q %q %s", i, g.Schema, g.Package, g.Name, g.Blob, w.Schema, w.Package, w.Name, w.Blob)
				}
			}
		}

		// Load adds validation to the walk: it must return, and agree with the walk.
		stop = fuzzWatchdog("Load")
		cat, err := Load(context.Background(), root)
		stop()
		if err != nil {
			if !IsInvalid(err) {
				t.Fatalf("Load of in-memory content failed with a non-InvalidError: %v", err)
			}
			return
		}
		if gotErr != nil {
			t.Fatalf("Load succeeds where walkMetas fails (%v)", gotErr)
		}
		defer cat.Close()
		metas, err := cat.ReadMetas()
		if err != nil {
			t.Fatal(err)
		}
		if len(metas) != len(got) {
			t.Fatalf("Load returns %d blobs, walkMetas %d", len(metas), len(got))
		}
		for i := range got {
			if compareMeta(metas[i], got[i]) != 0 {
				t.Fatalf("Load blob %d %s differs from walkMetas blob %s", i, metas[i].Blob, got[i].Blob)
			}
		}
	})
}

// fuzzReencode is the canonical form by definition: encoding/json's output, without HTML escaping,
// for what encoding/json decodes.
func fuzzReencode(b []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[true,false,null,"x"],"c":{"d":-12}}`,
		`{}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"a": 1}`, `{"a":1.0}`, `{"a":1e3}`, `{"a":01}`, `{"a":-0}`,
		`{"a":1234567890123456}`, `{"a":123456789012345}`, `{"a":"<b>&"}`, `{"a":"\u003cb\u003e"}`, `{"a":"\/"}`,
		`{"a":"\u00e9"}`, `{"a":"é\n\t\"\\"}`, `{"a\"b":1}`, `{"a":1}x`, `[1]`, "{\"a\":\"\xff\"}",
		"{\"a\":\"\u2028\"}", `{"a":"\u2028"}`, "{\"a\":1}\n \t", `{"":{"":[[],{}]}}`, `"str"`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	for _, data := range fuzzRealSeeds(f) {
		// One blob of each real file, as declcfg hands it over.
		_ = declcfg.WalkMetasReader(bytes.NewReader(data), func(m *declcfg.Meta, err error) error {
			if err == nil {
				f.Add([]byte(m.Blob))
			}
			return errStopSeeding
		})
	}
	f.Fuzz(func(t *testing.T, blob []byte) {
		m := &declcfg.Meta{Schema: "s", Package: "p", Name: "n", Blob: slices.Clone(blob)}
		got, err := canonicalize(m)
		if !bytes.Equal(m.Blob, blob) {
			t.Fatalf("canonicalize modified its input")
		}
		want, werr := fuzzReencode(bytes.TrimRight(blob, " \t\r\n"))
		switch {
		case err != nil && werr == nil && len(want) > 0 && want[0] == '{':
			t.Fatalf("canonicalize fails on a JSON object: %v", err)
		case err != nil:
			return
		case werr != nil:
			t.Fatalf("canonicalize accepts %q, which encoding/json rejects: %v", blob, werr)
		case !bytes.Equal(got.Blob, want):
			t.Fatalf("canonical form differs from encoding/json:\n got  %s\n want %s", got.Blob, want)
		case got.Schema != "s" || got.Package != "p" || got.Name != "n":
			t.Fatalf("canonicalize changed the meta fields: %+v", got)
		}
		if isCanonical(blob) {
			if w, err := fuzzReencode(blob); err != nil || !bytes.Equal(w, blob) {
				t.Fatalf("isCanonical(%q) but encoding/json writes %q (%v)", blob, w, err)
			}
		}
		// Canonical is a fixed point.
		again, err := canonicalize(&declcfg.Meta{Blob: got.Blob})
		if err != nil || !bytes.Equal(again.Blob, got.Blob) {
			t.Fatalf("canonicalizing the canonical form %s gives %s, %v", got.Blob, again.Blob, err)
		}
	})
}

var errStopSeeding = fmt.Errorf("enough seeds")
