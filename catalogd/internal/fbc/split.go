package fbc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// A catalog file is cut into documents as the Kubernetes YAML-or-JSON decoder that declcfg uses
// cuts it, but as it is read: a document goes to the walk's workers as soon as its end is read, so
// the walk holds a few documents at a time, never a whole file (a whole catalog is often one file
// of tens of MB). A file whose first non-space character within its first 4096 bytes is '{' is a
// stream of JSON values, each one a document; another file is YAML, cut at "---" lines.

// walkFunc receives the blobs of a walk, or the error that ends a file (see walkMetas). m.Blob is
// the walk's buffer: it is valid only until walkFunc returns (copy what is kept).
type walkFunc = func(path string, m *declcfg.Meta, err error) error

// jsonSniffLen is how far the Kubernetes YAML-or-JSON decoder looks for a JSON stream's opening
// brace (declcfg creates it with a 4096-byte buffer).
const jsonSniffLen = 4096

// readSize is the read buffer of a file.
const readSize = 64 << 10

// fileSplitter cuts one file into documents and sends them; errors reading or decoding the file
// go to fn, and its methods return what fn returns (or send's error).
type fileSplitter struct {
	root fs.FS
	path string
	fn   walkFunc
	send func(document) error
}

// splitFile reads the file at path under root and sends its documents as it reads them.
func splitFile(root fs.FS, path string, fn walkFunc, send func(document) error) error {
	s := fileSplitter{root: root, path: path, fn: fn, send: send}
	f, err := root.Open(path)
	if err != nil {
		return fn(path, nil, err)
	}
	defer f.Close()
	rec := &readRecorder{r: f}
	r := bufio.NewReaderSize(rec, readSize)
	head, _ := r.Peek(jsonSniffLen)
	if rec.err != nil {
		return s.readError(rec.err)
	}
	if trimmed := bytes.TrimLeftFunc(head, unicode.IsSpace); len(trimmed) > 0 && trimmed[0] == '{' {
		return s.json(r, rec)
	}
	return s.yaml(r, 1)
}

// yaml cuts the YAML read from r at separator lines: "---" followed by nothing but spaces or a
// comment. Every document ends with a newline, as the Kubernetes line reader writes them (it
// matters to a block scalar on the last line). firstLine is the line of the file where r starts.
func (s fileSplitter) yaml(r *bufio.Reader, firstLine int) error {
	var doc []byte // the document being read; a document sent is a copy, so this buffer is reused
	startLine, line := firstLine, firstLine
	flush := func() error {
		if isBlankYAML(doc) {
			return nil
		}
		data := make([]byte, len(doc), len(doc)+1)
		copy(data, doc)
		if data[len(data)-1] != '\n' {
			data = append(data, '\n')
		}
		return s.send(document{path: s.path, line: startLine, data: data})
	}
	for {
		start := len(doc)
		var err error
		doc, err = appendLine(doc, r)
		if err != nil && !errors.Is(err, io.EOF) {
			return s.readError(err)
		}
		// A separator ends a document only once it has a line: the Kubernetes reader keeps a
		// separator that starts a document as the document's first line (which matters for "---#x",
		// YAML content rather than a document marker).
		if start > 0 && isSeparator(doc[start:]) {
			doc = doc[:start]
			if err := flush(); err != nil {
				return err
			}
			doc, startLine = doc[:0], line+1
		}
		if err != nil {
			return flush()
		}
		line++
	}
}

// appendLine appends the next line of r to dst, with its newline (the last line may have none);
// the error is io.EOF after the last line.
func appendLine(dst []byte, r *bufio.Reader) ([]byte, error) {
	for {
		chunk, err := r.ReadSlice('\n')
		dst = append(dst, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return dst, err
		}
	}
}

// isSeparator reports whether a line is a YAML document separator.
func isSeparator(l []byte) bool {
	rest := bytes.TrimSpace(l[min(3, len(l)):])
	return bytes.HasPrefix(l, []byte("---")) && (len(rest) == 0 || rest[0] == '#')
}

// isBlankYAML reports whether a document holds only blank lines and comments.
func isBlankYAML(b []byte) bool {
	for len(b) > 0 {
		l := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			l, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if l = bytes.TrimSpace(l); len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

// json decodes the JSON stream read from r one value at a time and sends each value (workers
// decode them, see document.metas), so the values of one large file are spread over all CPUs.
//
// Like the Kubernetes decoder, it gives up on JSON when the first or second value does not decode
// and reads the rest of the file as YAML (see yamlFallback); a later error is the file's error.
// The first two values are therefore decoded here.
func (s fileSplitter) json(r io.Reader, rec *readRecorder) error {
	dec := json.NewDecoder(r)
	var decoded int
	var consumed int64
	for {
		var raw json.RawMessage // a new one each time: Decode reuses a RawMessage's array
		err := dec.Decode(&raw)
		if rec.err != nil {
			return s.readError(rec.err)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		doc := document{path: s.path, data: raw, json: true, end: dec.InputOffset()}
		if err == nil && decoded < 2 {
			doc.decoded = true
			err = json.Unmarshal(raw, &doc.value)
		}
		if err != nil {
			if decoded > 1 {
				return s.fn(s.path, nil, jsonError(s.root, s.path, dec.InputOffset(), err))
			}
			return s.yamlFallback(consumed, dec.InputOffset(), err)
		}
		decoded, consumed = decoded+1, dec.InputOffset()
		if err := s.send(doc); err != nil {
			return err
		}
	}
}

// yamlFallback reads the file from offset consumed (the end of the values decoded so far) on as
// YAML, as the Kubernetes decoder does when the JSON stream it sniffed fails early: it drops white
// space up to and including the first newline and reads the rest as YAML, or, where that gives up,
// reports the JSON error jsonErr (the decoder was at offset when it failed).
func (s fileSplitter) yamlFallback(consumed, offset int64, jsonErr error) error {
	f, err := s.root.Open(s.path)
	if err != nil {
		return s.fn(s.path, nil, err)
	}
	defer f.Close()
	var lines newlineCounter
	if _, err := io.CopyN(&lines, f, consumed); err != nil {
		return s.readError(err)
	}
	r := bufio.NewReaderSize(f, readSize)
	newline, ok, err := skipSpaceLine(r)
	if err != nil {
		return s.readError(err)
	}
	if !ok {
		return s.fn(s.path, nil, jsonError(s.root, s.path, offset, jsonErr))
	}
	if newline {
		lines++
	}
	return s.yaml(r, 1+int(lines))
}

// skipSpaceLine drops leading white space up to and including the first newline, as the Kubernetes
// decoder does before it falls back from JSON to YAML; newline says whether it dropped one, ok is
// false where it gives up (invalid UTF-8, nothing left).
func skipSpaceLine(r *bufio.Reader) (newline, ok bool, err error) {
	for {
		c, _, err := r.ReadRune()
		if errors.Is(err, io.EOF) {
			return false, false, nil
		}
		if err != nil {
			return false, false, err
		}
		if c == utf8.RuneError || !unicode.IsSpace(c) {
			if c != utf8.RuneError {
				err = r.UnreadRune()
			}
			return false, c != utf8.RuneError, err
		}
		if c == '\n' {
			return true, true, nil
		}
	}
}

// jsonError adds to a JSON decoding error the line where it happened (see jsonPosition); offset is
// the decoder's InputOffset after the error.
func jsonError(root fs.FS, path string, offset int64, err error) error {
	return fmt.Errorf("%s: %w", jsonPosition(root, path, offset, err), err)
}

// jsonPosition names the line of a JSON decoding error: the syntax error's offset, or the first
// non-blank byte at or after offset (where the failing value starts, or the one after a value that
// did not decode). Errors are rare and the walk keeps no file, so it reads the file again to count
// the lines.
func jsonPosition(root fs.FS, path string, offset int64, err error) string {
	var se *json.SyntaxError
	syntax := errors.As(err, &se)
	if syntax {
		offset = se.Offset
	}
	offset = max(offset, 0)
	f, oerr := root.Open(path)
	if oerr != nil {
		return "JSON at byte " + strconv.FormatInt(offset, 10)
	}
	defer f.Close()
	var lines newlineCounter
	r := bufio.NewReaderSize(f, readSize)
	n, _ := io.CopyN(&lines, r, offset)
	if !syntax && n == offset {
		for {
			b, err := r.ReadByte()
			if err != nil || strings.IndexByte(" \t\r\n", b) < 0 {
				break
			}
			if b == '\n' {
				lines++
			}
		}
	}
	return "JSON at line " + strconv.FormatInt(int64(lines)+1, 10)
}

// newlineCounter is a writer that counts the newlines written to it.
type newlineCounter int64

func (c *newlineCounter) Write(p []byte) (int, error) {
	*c += newlineCounter(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

// readRecorder keeps the first error other than io.EOF of a reader, so that a read error is not
// taken for invalid content.
type readRecorder struct {
	r   io.Reader
	err error
}

func (r *readRecorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && r.err == nil {
		r.err = err
	}
	return n, err
}

// readError reports an error reading the file as fs.ReadFile of os.DirFS does: naming the file by
// its path under the root.
func (s fileSplitter) readError(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		err = &fs.PathError{Op: pe.Op, Path: s.path, Err: pe.Err}
	}
	return s.fn(s.path, nil, err)
}
