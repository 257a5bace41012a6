package fbc

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// appendJSON appends v to dst as encoding/json encodes it with HTML escaping off (json.Encoder with
// SetEscapeHTML(false), without its trailing newline): compact, object keys sorted byte-wise,
// numbers formatted as float64, strings escaped as that package escapes them. It knows the values
// that decoding JSON or YAML into an `any` gives once jsonable has made them JSON's: map[string]any,
// []any, string, float64, bool and nil. ok is false for anything else, and for a NaN or an infinite
// number (which encoding/json refuses): the caller then encodes with encoding/json, whose output or
// error is the reference. TestAppendJSONMatchesEncodingJSON and FuzzAppendJSON hold the two equal.
//
// The walk encodes every blob with it, into a buffer each of its workers reuses: encoding/json
// writes a blob into its own pooled buffer and then copies it into the caller's, which holds a
// large blob twice and allocates it once more for every blob.
func appendJSON(dst []byte, v any) (_ []byte, ok bool) {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		return strconv.AppendBool(dst, t), true
	case string:
		return appendJSONString(dst, t), true
	case float64:
		return appendJSONFloat(dst, t)
	case []any:
		if t == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendJSON(dst, e); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		if t == nil {
			return append(dst, "null"...), true
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			if dst, ok = appendJSON(dst, t[k]); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
	return dst, false
}

// appendJSONFloat formats f as encoding/json formats a float64: like strconv's 'f' format with the
// fewest digits, or 'e' below 1e-6 and from 1e21 on, with a one-digit exponent unpadded.
func appendJSONFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1] // e-07 → e-7
		dst = dst[:n-1]
	}
	return dst, true
}

const lowerHex = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does without HTML escaping: '"' and '\\' and the
// control characters escaped (\b, \f, \n, \r, \t, else \u00XX), each invalid UTF-8 byte written as
// \ufffd, U+2028 and U+2029 escaped, everything else as it is.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0 // of the bytes not yet copied
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', lowerHex[b>>4], lowerHex[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', lowerHex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
