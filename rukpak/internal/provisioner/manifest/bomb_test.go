package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Issue 18's bound for a catalog of nested aliases, applied to bundles too: refused within 5 s,
// with less than 200 MB.
const (
	bombTimeBound  = 5 * time.Second
	bombAllocBound = 200 << 20
)

const configMapHead = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\n"

// nestedLaughs: 9 levels of 9 aliases, 9^9 strings.
func nestedLaughs() string {
	var b strings.Builder
	b.WriteString(configMapHead + "l0: &l0 \"lol\"\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 9), ","))
	}
	return b.String()
}

// longStringLaughs: 999 aliases of a 1 MiB string, which go-yaml's own guard lets through.
func longStringLaughs() string {
	return configMapHead + "data:\n  s: &s \"" + strings.Repeat("x", 1<<20) + "\"\nl: [" + strings.TrimSuffix(strings.Repeat("*s,", 999), ",") + "]\n"
}

// mergeLaughs expands through merge keys.
func mergeLaughs() string {
	var b strings.Builder
	b.WriteString(configMapHead + "m0: &m0 {a: \"" + strings.Repeat("y", 200) + "\"}\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "m%d: &m%d\n", i, i)
		for j := range 8 {
			fmt.Fprintf(&b, "  k%d: {<<: *m%d}\n", j, i-1)
		}
	}
	return b.String()
}

func measure(fn func()) (time.Duration, uint64) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	fn()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	return elapsed, after.TotalAlloc - before.TotalAlloc
}

// TestDecodeRefusesAliasBombs: a manifest document whose YAML aliases expand it more than ten times
// is refused before it is expanded, with a message naming the file, the document and the reason,
// within the bounds of time and memory (measured: allocations of the call).
func TestDecodeRefusesAliasBombs(t *testing.T) {
	good := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\n"
	for name, tc := range map[string]struct {
		data string
		doc  int
	}{
		"nested aliases":          {nestedLaughs(), 1},
		"long string":             {longStringLaughs(), 1},
		"merge keys":              {mergeLaughs(), 1},
		"after an empty document": {good + "---\n---\n" + nestedLaughs(), 2}, // empty documents are not counted
		"YAML after a JSON value": {`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"json"}}` + "\n" + nestedLaughs(), 2},
		"flow style":              {"{apiVersion: v1, kind: ConfigMap, metadata: {name: x}, a: &a [x, x, x, x, x, x, x, x], b: &b [*a, *a, *a, *a, *a, *a, *a, *a], c: &c [*b, *b, *b, *b, *b, *b, *b, *b], d: &d [*c, *c, *c, *c, *c, *c, *c, *c], e: [*d, *d, *d, *d, *d, *d, *d, *d]}\n", 1},
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			elapsed, alloc := measure(func() { _, err = Decode("manifests/laughs.yaml", []byte(tc.data)) })
			t.Logf("%s: refused %d bytes in %v, allocating %.1f MiB", name, len(tc.data), elapsed, float64(alloc)/(1<<20))
			if !errors.Is(err, ErrAliasExpansion) {
				t.Fatalf("want ErrAliasExpansion, got %v", err)
			}
			want := fmt.Sprintf("manifests/laughs.yaml (document %d): refused: its YAML aliases (*name) expand its ", tc.doc)
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "write the repeated content out") {
				t.Errorf("message lacks %q:\n%v", want, err)
			}
			if elapsed > bombTimeBound || alloc > bombAllocBound {
				t.Errorf("took %v and allocated %d bytes; the bound is %v and %d bytes", elapsed, alloc, bombTimeBound, bombAllocBound)
			}
		})
	}
}

// TestModestAliasesAreDecodedAsWrittenOut: anchors that repeat a little (an env list shared by two
// containers) decode exactly as the content written out.
func TestModestAliasesAreDecodedAsWrittenOut(t *testing.T) {
	head := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n    spec:\n      containers:\n"
	withAliases := head + "      - name: a\n        env: &env [{name: A, value: \"1\"}, {name: B, value: \"2\"}]\n      - name: b\n        env: *env\n"
	written := head + "      - name: a\n        env: [{name: A, value: \"1\"}, {name: B, value: \"2\"}]\n      - name: b\n        env: [{name: A, value: \"1\"}, {name: B, value: \"2\"}]\n"
	a, err := Decode("a.yaml", []byte(withAliases))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decode("a.yaml", []byte(written))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a[0].Obj.Object, b[0].Obj.Object) {
		t.Fatalf("with aliases: %v\nwritten out: %v", a[0].Obj.Object, b[0].Obj.Object)
	}
}

func TestReadDirRefusesAliasBombs(t *testing.T) {
	_, err := ReadDir(fstest.MapFS{
		"manifests/a.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")},
		"manifests/b.yaml": {Data: []byte(nestedLaughs())},
	}, "manifests")
	if !errors.Is(err, ErrAliasExpansion) || !strings.Contains(err.Error(), "manifests/b.yaml (document 1): refused") {
		t.Fatalf("got %v", err)
	}
}

// TestCheckFileAliases covers the documents any decoder may read: after "---" lines, and YAML that
// follows a JSON value. Files that are not YAML, or use few aliases, pass.
func TestCheckFileAliases(t *testing.T) {
	for name, tc := range map[string]struct {
		data   string
		refuse bool
	}{
		"nested aliases":          {nestedLaughs(), true},
		"second document":         {"a: 1\n---\n" + nestedLaughs(), true},
		"YAML after a JSON value": {`{"a":1}` + "\n" + nestedLaughs(), true},
		"few aliases":             {"a: &x [1, 2]\nb: *x\n", false},
		"markdown":                {"# Notes\n\n**bold** R&D &x *x [link](x)\n", false},
		"binary-looking":          {"\x00\x01&a *a\xff", false},
	} {
		err := CheckFileAliases([]byte(tc.data))
		if got := errors.Is(err, ErrAliasExpansion); got != tc.refuse || (!tc.refuse && err != nil) {
			t.Errorf("%s: got %v, want refused=%v", name, err, tc.refuse)
		}
	}
}

// kubernetesDecode is Decode as it was before it checked aliases: k8s.io/apimachinery's
// YAMLOrJSONDecoder, which Decode must still agree with on every file without alias bombs.
func kubernetesDecode(data []byte) ([]map[string]any, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []map[string]any
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, m)
	}
}

// ourDecode runs Decode's decoder the same way, without Decode's checks of the objects.
func ourDecode(data []byte) ([]map[string]any, error) {
	dec := newDecoder(data)
	var out []map[string]any
	for {
		var m map[string]any
		if err := dec.decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, m)
	}
}

var decoderSeeds = []string{
	"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b1}\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b2}\n",
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ax"}}`,
	`{"a":1}{"b":2}` + "\n" + `{"c":3}`,
	`{"a":1}` + "\nb: 2\n---\nc: 3\n",
	`{"a":1}` + "\n",
	`{"a":1}x`,
	`{"a":1}` + "\n  \t\nb: 2\n",
	`{"a":1}{"b":2}` + "\nc: 3\n",
	"{a: 1, b: [x, y]}\n",
	"   \n\n{\"a\": 1}\n",
	"# comment only\n",
	"---\n--- # comment\na: 1\n---\n",
	"a: 1\n--- x\nb: 2\n",
	"a: [\n",
	"- 1\n- 2\n",
	"a: 1\n---\n- x\n",
	"",
	"\n\n\n",
	"a: &x [1]\nb: *x\n",
	"{\"a\":\"\xff\"}",
	`{"a":1}` + "\n\xffb: 2\n",
	"a: !!binary /w==\n",
	`{"a":1}` + "\n\n\n\nb: 2",
	"a: 1.5\nb: 10\nc: 1e3\nd: 0x1F\ne: yes\nf: ~\n",
	"a: 1\nb: 1\na: 2\n",
}

// TestDecoderMatchesKubernetes: on files without alias bombs, Decode reads the same documents into
// the same objects as the Kubernetes decoder, and fails where it fails, with the same message.
func TestDecoderMatchesKubernetes(t *testing.T) {
	for _, s := range decoderSeeds {
		compareDecoders(t, []byte(s))
	}
}

func compareDecoders(t *testing.T, data []byte) {
	t.Helper()
	got, gotErr := ourDecode(data)
	if errors.Is(gotErr, ErrAliasExpansion) && mayHaveAliases(data) {
		return // refused on purpose
	}
	want, wantErr := kubernetesDecode(data)
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && !mayHaveAliases(data) && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("%q:\n got error  %v\n want error %v", data, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got  %#v\n want %#v", data, got, want)
	}
}

// FuzzDecodeMatchesKubernetes is TestDecoderMatchesKubernetes on any input.
func FuzzDecodeMatchesKubernetes(f *testing.F) {
	for _, s := range decoderSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		compareDecoders(t, data)
	})
}
