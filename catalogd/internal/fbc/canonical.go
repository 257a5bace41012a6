package fbc

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// The canonical form of a blob is what encoding/json writes for it, without HTML escaping, after
// decoding it into an `any`: compact, object keys sorted, numbers as float64. It is also what
// operator-registry's YAML decoding produces, so YAML blobs, the bulk of real catalogs, are usually
// canonical already:
// isCanonical recognises them with one allocation-free scan and canonicalize re-encodes only the
// others.

// canonicalize returns m with its blob in canonical form.
func canonicalize(m *declcfg.Meta) (Meta, error) {
	blob := bytes.TrimRight(m.Blob, " \t\r\n")
	if !isCanonical(blob) {
		var v any
		if err := json.Unmarshal(blob, &v); err != nil {
			return Meta{}, err
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return Meta{}, err
		}
		blob = bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
	}
	if len(blob) == 0 || blob[0] != '{' {
		return Meta{}, errors.New("a blob must be a JSON or YAML object")
	}
	return Meta{Schema: m.Schema, Package: m.Package, Name: m.Name, Blob: blob}, nil
}

// isCanonical reports whether b is certainly in canonical form. False negatives are fine (the slow
// path re-encodes); false positives are not.
func isCanonical(b []byte) bool {
	if len(b) == 0 || b[0] != '{' || !utf8.Valid(b) {
		return false
	}
	s := scanner{b: b}
	if !s.value() {
		return false
	}
	return s.i == len(b)
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == '"':
		_, ok := s.str()
		return ok
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return false
}

func (s *scanner) lit(l string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(l)) {
		return false
	}
	s.i += len(l)
	return true
}

// number accepts only small integers, which float64 formatting writes back identically.
func (s *scanner) number() bool {
	neg := s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	digits := s.i - start
	switch {
	case digits == 0 || digits > 15:
		return false
	case s.b[start] == '0' && (digits > 1 || neg): // leading zeros, -0
		return false
	case s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E'):
		return false
	}
	return true
}

// str scans a string and returns its raw content (between the quotes). It rejects escapes that
// json.Marshal would write differently.
func (s *scanner) str() ([]byte, bool) {
	s.i++ // opening quote
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			return raw, true
		case c < 0x20:
			return nil, false
		case c == 0xe2 && s.i+2 < len(s.b) && s.b[s.i+1] == 0x80 && (s.b[s.i+2] == 0xa8 || s.b[s.i+2] == 0xa9):
			return nil, false // U+2028, U+2029: json.Marshal escapes them
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return nil, false
			}
			switch s.b[s.i+1] {
			case '"', '\\', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return nil, false
				}
				switch string(s.b[s.i+2 : s.i+6]) {
				case "2028", "2029":
					s.i += 6
				default:
					return nil, false
				}
			default:
				return nil, false
			}
		default:
			s.i++
		}
	}
	return nil, false
}

func (s *scanner) object() bool {
	s.i++ // {
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	var prev []byte
	for first := true; ; first = false {
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		key, ok := s.str()
		if !ok || bytes.IndexByte(key, '\\') >= 0 {
			return false // keys with escapes: let the slow path sort them
		}
		if !first && bytes.Compare(prev, key) >= 0 {
			return false
		}
		prev = key
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		if !s.value() {
			return false
		}
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *scanner) array() bool {
	s.i++ // [
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if !s.value() {
			return false
		}
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}
