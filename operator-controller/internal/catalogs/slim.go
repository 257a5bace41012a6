package catalogs

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"sync"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// Slimming the blobs of parts. A bundle's olm.bundle.object properties carry its manifests (base64
// CSV and CRDs: most of the bytes of an older catalog such as OpenShift's v4.16 community catalog).
// Resolution never reads them, nor does an Operator's status (olm.bundle.object is not among the
// properties it records) or a BundleDeployment, which pulls the bundle's image. Parsed and indexed,
// each is held four times over (the raw value, the decoded manifest, the model's decoded and its
// normalised copies): with 100 Operators across four catalogs of OpenShift's size that was about
// 140 MB of live heap and 240 MiB of RSS. So the blobs a part read (MetadataReader.ReadPart) keeps
// have each olm.bundle.object value replaced by the empty object, as catalogd's validation does
// (catalogd/internal/fbc: withoutHeavyProperties), before anything parses them. deppy's cluster
// cache then slims olm.csv.metadata the same way.
//
// What stays the same: the property stays where it was (the indexes in parse errors of other
// properties do not move) and every other byte of the blob is kept as served. A bundle without an
// image keeps its objects (they are what makes it a valid bundle), and so does a value that would not
// parse as a bundle object (base64 of JSON): its error is reported as before. Whole catalogs
// (ReadBlobs: --read-whole-catalogs, cel constraints, `olmv1 preview`) are not slimmed: their
// content hash is computed from the blobs as served.

// slimmedObject is the value an olm.bundle.object property is given.
var slimmedObject = json.RawMessage(`{}`)

// slimBlob returns blob, a blob of schema, with the value of each olm.bundle.object property
// replaced by slimmedObject when blob is a bundle with an image and every such value is a valid
// bundle object; otherwise blob itself.
//
// The blob is decoded once, as declcfg decodes a bundle (the image and the properties, each kept
// as its raw bytes). Each bundle object's raw bytes are then found in the blob, in order, and
// replaced: a JSON object with quoted keys appears verbatim only where it is a value, so a match
// before the property itself could only be in a field that decoding ignores, and the property would
// then be kept as served.
func slimBlob(schema string, blob []byte) []byte {
	if schema != declcfg.SchemaBundle || !bytes.Contains(blob, []byte(property.TypeBundleObject)) {
		return blob
	}
	var b struct {
		Image      *string           `json:"image"`
		Properties []json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(blob, &b) != nil || b.Image == nil || *b.Image == "" {
		return blob
	}
	var objects []json.RawMessage
	for _, raw := range b.Properties {
		var p struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		}
		if json.Unmarshal(raw, &p) != nil {
			return blob
		}
		if p.Type != property.TypeBundleObject {
			continue
		}
		if !validBundleObject(p.Value) {
			return blob
		}
		objects = append(objects, raw)
	}
	if len(objects) == 0 {
		return blob
	}
	out := make([]byte, 0, len(blob)-len(objects[0]))
	pos := 0
	for _, raw := range objects {
		i := bytes.Index(blob[pos:], raw)
		if i < 0 {
			return blob
		}
		out = append(out, blob[pos:pos+i]...)
		out = append(out, slimmedProperty...)
		pos += i + len(raw)
	}
	return append(out, blob[pos:]...)
}

// slimmedProperty is an olm.bundle.object property with slimmedObject as its value.
var slimmedProperty = []byte(`{"type":"` + property.TypeBundleObject + `","value":` + string(slimmedObject) + `}`)

// validBundleObject reports whether value parses as a bundle object whose data is JSON: what
// declcfg's loading and the model's property parsing would accept. The common form,
// {"data":"<base64>"} with nothing to unescape, is decoded into a pooled buffer, as encoding/json
// decodes a []byte (base64.StdEncoding), without allocating the manifest.
func validBundleObject(value json.RawMessage) bool {
	const prefix, suffix = `{"data":"`, `"}`
	if data, ok := bytes.CutPrefix(value, []byte(prefix)); ok && bytes.HasSuffix(data, []byte(suffix)) {
		data = data[:len(data)-len(suffix)]
		if !bytes.ContainsAny(data, "\\\"") {
			bufp := scratch.Get().(*[]byte)
			defer scratch.Put(bufp)
			if n := base64.StdEncoding.DecodedLen(len(data)); cap(*bufp) < n {
				*bufp = make([]byte, n)
			}
			n, err := base64.StdEncoding.Decode((*bufp)[:cap(*bufp)], data)
			return err == nil && json.Valid((*bufp)[:n])
		}
	}
	var obj property.BundleObject
	if json.Unmarshal(value, &obj) != nil {
		return false
	}
	return json.Valid(obj.Data)
}

// scratch holds the buffers validBundleObject decodes into.
var scratch = sync.Pool{New: func() any { return new([]byte) }}
