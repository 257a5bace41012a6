package fbc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// TestStreamedJSONErrors: an error in a JSON stream names the line where the Kubernetes decoder
// would stop: a syntax error's line, or the line of the first non-blank byte after a value that
// does not decode (1e999 overflows a float64); an error in the first or second value makes the
// rest of the file YAML instead.
func TestStreamedJSONErrors(t *testing.T) {
	three := `{"schema":"a"}` + "\n" + `{"schema":"b"}` + "\n"
	for in, want := range map[string]string{
		three + "\n" + `{"schema":"c","n":1e999}` + "\n\n  \n" + `{"schema":"d"}`: "JSON at line 7: json: cannot unmarshal number 1e999",
		three + `{"schema":"c","n":1e999}` + "\n\n  \n":                           "JSON at line 6: json: cannot unmarshal number 1e999",
		three + `{"schema":"c"}` + "\n{\"schema\":\n":                             "JSON at line 4: unexpected EOF",
		three + `{"schema":"c"}` + "\n\n x \n":                                    "JSON at line 5: invalid character 'x' looking for beginning of value",
		`{"schema":"a"} {"schema":"b"} {"schema":"c"} }`:                          "JSON at line 1: invalid character '}' looking for beginning of value",
		`{"schema":"a"}` + " \t\xff \nschema: b\n":                                "JSON at line 1: invalid character 'ÿ'",
		three + "5\n": "JSON: a blob must be an object, not float64",
		// The second value fails: the rest is YAML, from the line after the first value.
		`{"schema":"a"}` + "\n" + `{"schema":"b",` + "\n" + "x: [\n": "YAML document starting at line 2: yaml: line 2: did not find expected node content",
	} {
		_, err := ourMetas(t, mapFS(map[string]string{"c.json": in}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
	for in, n := range map[string]int{
		`{"schema":"a","n":1e999}`:                            1, // the whole file is YAML
		`{"schema":"a"}` + "\n" + `{"n":1e999,"schema":"b"}`:  2,
		`{"schema":"a"}` + "  x: 1\nschema: b\n":              2,
		`{"schema":"a"}` + "\n---\nschema: b\n---\nschema: c": 3,
		"\v" + `{"schema":"a"}` + "\n":                        1, // sniffed as JSON, read as YAML
	} {
		got, err := ourMetas(t, mapFS(map[string]string{"c.json": in}))
		if err != nil || len(got) != n {
			t.Errorf("%q: %d blobs, %v; want %d blobs", in, len(got), err, n)
		}
	}
}

// TestWalkReportsTheFirstFailedDocument: where several documents fail, the error is the first
// one's in file order, whichever worker parses it first.
func TestWalkReportsTheFirstFailedDocument(t *testing.T) {
	var yamlDocs, jsonValues []string
	for i := range 200 {
		y, j := fmt.Sprintf("schema: s\nname: n%d\n", i), fmt.Sprintf(`{"schema":"s","name":"n%d"}`, i)
		switch i {
		case 60:
			y, j = "- not an object\n", `["not an object"]`
		case 150:
			y, j = "schema: [\n", `{"schema":"s","name":5}`
		}
		yamlDocs, jsonValues = append(yamlDocs, y), append(jsonValues, j)
	}
	files := map[string]string{
		"a/catalog.yaml": strings.Join(yamlDocs, "---\n"),
		"b/catalog.json": strings.Join(jsonValues, "\n"),
	}
	for range 20 {
		_, err := ourMetas(t, mapFS(files))
		if want := "file a/catalog.yaml: YAML document starting at line 181: a blob must be an object, not []interface {}"; err == nil || err.Error() != want {
			t.Fatalf("error %v, want %q", err, want)
		}
		delete(files, "a/catalog.yaml")
		_, err = ourMetas(t, mapFS(files))
		if want := "file b/catalog.json: JSON: a blob must be an object, not []interface {}"; err == nil || err.Error() != want {
			t.Fatalf("error %v, want %q", err, want)
		}
		files["a/catalog.yaml"] = strings.Join(yamlDocs, "---\n")
	}
}

// TestStreamedLongLines: lines and values longer than the read buffer are read whole.
func TestStreamedLongLines(t *testing.T) {
	long := strings.Repeat("x", 3*readSize+17)
	assertSameMetas(t, mapFS(map[string]string{
		"a/catalog.yaml": "schema: s\nname: a\nd: " + long + "\n---\nschema: s\nname: b\nm: |\n  " + long,
		"b/catalog.json": `{"schema":"s","name":"c","d":"` + long + `"}` + "\n" + `{"schema":"s","name":"d"}`,
	}))
}

// failingFS serves its files until byte failAt, then fails with errDisk. (Its files are read
// through Open: it has no ReadFile method.)
type failingFS struct {
	files  fstest.MapFS
	failAt int
}

var errDisk = errors.New("disk on fire")

func (f failingFS) Open(name string) (fs.File, error) {
	file, err := f.files.Open(name)
	if err != nil || isDir(file) {
		return file, err
	}
	return &failingFile{File: file, left: f.failAt}, nil
}

func isDir(f fs.File) bool {
	info, err := f.Stat()
	return err == nil && info.IsDir()
}

type failingFile struct {
	fs.File
	left int
}

func (f *failingFile) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, errDisk
	}
	n, err := f.File.Read(p[:min(len(p), f.left)])
	f.left -= n
	return n, err
}

// TestReadErrorsAreNotParseErrors: a file that cannot be read to its end is reported as such, not
// as a truncated document.
func TestReadErrorsAreNotParseErrors(t *testing.T) {
	for name, data := range map[string]string{
		"c.json": strings.Repeat(`{"schema":"s"}`+"\n", 20000),
		"c.yaml": strings.Repeat("schema: s\n---\n", 20000),
	} {
		for _, failAt := range []int{0, 100, 100000} {
			var c collector
			err := walkMetas(context.Background(), failingFS{mapFS(map[string]string{name: data}), failAt}, c.add)
			if !errors.Is(err, errDisk) {
				t.Errorf("%s failing at byte %d: error %v, want %v", name, failAt, err, errDisk)
			}
		}
	}
}

// gatedFS serves the first gateAt bytes of its files, then waits until open is closed. (Its files
// are read through Open: it has no ReadFile method.)
type gatedFS struct {
	files  fstest.MapFS
	gateAt int
	open   chan struct{}
}

func (g gatedFS) Open(name string) (fs.File, error) {
	file, err := g.files.Open(name)
	if err != nil || isDir(file) {
		return file, err
	}
	return &gatedFile{File: file, left: g.gateAt, open: g.open}, nil
}

type gatedFile struct {
	fs.File
	left int
	open chan struct{}
}

func (f *gatedFile) Read(p []byte) (int, error) {
	if f.left <= 0 {
		<-f.open
		return f.File.Read(p)
	}
	n, err := f.File.Read(p[:min(len(p), f.left)])
	f.left -= n
	return n, err
}

// TestWalkStreamsFiles: the walk hands over the blobs of a file before it has read the file to its
// end (it never holds a whole file): the file below is served only in part until the first blob
// has reached the callback.
func TestWalkStreamsFiles(t *testing.T) {
	cat := genBigCatalog(1 << 20)
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			data := encode(t, cat[0], format)
			g := gatedFS{files: mapFS(map[string]string{"catalog." + format: string(data)}), gateAt: len(data) / 2, open: make(chan struct{})}
			var once sync.Once
			var blobs int
			var mu sync.Mutex
			done := make(chan error, 1)
			go func() {
				done <- walkMetas(context.Background(), g, func(path string, m *declcfg.Meta, err error) error {
					if err != nil {
						return err
					}
					once.Do(func() { close(g.open) })
					mu.Lock()
					blobs++
					mu.Unlock()
					return nil
				})
			}()
			select {
			case err := <-done:
				if err != nil || blobs != len(cat[0]) {
					t.Fatalf("walk: %d blobs, %v; want %d blobs", blobs, err, len(cat[0]))
				}
			case <-time.After(time.Minute):
				t.Fatal("no blob reached the callback while the first half of the file was read: the walk reads whole files")
			}
		})
	}
}
