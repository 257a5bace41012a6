package metadataapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
)

// streamsList says whether a list answer in form f is written item by item (writeList) rather than
// encoded whole: JSON lists of objects or of metadata.
func streamsList(f form) bool {
	return !f.yaml && (f.as == "" || f.as == "PartialObjectMetadataList")
}

// writeList answers 200 with l, encoding one item at a time into the response (through gzip when
// the answer is large and the client accepts it), so that a large list is never held twice in
// memory, once as objects and once as its encoding. The bytes are those of encoding the list whole.
func writeList(w http.ResponseWriter, r *http.Request, f form, l *metadatav1alpha1.CatalogMetadataList) {
	out, done := startAnswer(w, r, http.StatusOK, f.contentType(), estimateListSize(l))
	defer done()
	buf := bufio.NewWriterSize(out, 32<<10)
	defer buf.Flush()
	_ = encodeList(buf, f, l)
}

// encodeList writes l as JSON to w: the list's own fields, then every item.
func encodeList(w io.Writer, f form, l *metadatav1alpha1.CatalogMetadataList) error {
	typ := metav1.TypeMeta{APIVersion: metadatav1alpha1.SchemeGroupVersion.String(), Kind: "CatalogMetadataList"}
	if f.as != "" {
		typ = metav1.TypeMeta{APIVersion: metav1.GroupName + "/" + f.asVersion, Kind: "PartialObjectMetadataList"}
	}
	head, err := json.Marshal(struct {
		metav1.TypeMeta `json:",inline"`
		ListMeta        metav1.ListMeta `json:"metadata"`
	}{typ, l.ListMeta})
	if err != nil {
		return err
	}
	// head is {"kind":…,"apiVersion":…,"metadata":{…}}: the items go before its closing brace.
	if _, err := w.Write(head[:len(head)-1]); err != nil {
		return err
	}
	if _, err := io.WriteString(w, `,"items":[`); err != nil {
		return err
	}
	for i := range l.Items {
		var b []byte
		var err error
		if f.as != "" {
			b, err = json.Marshal(partial(&l.Items[i], f.asVersion))
		} else {
			b, err = marshalObject(&l.Items[i])
		}
		if err != nil {
			return err
		}
		if i > 0 {
			b = append([]byte{','}, b...)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	_, err = io.WriteString(w, "]}")
	return err
}

// contentLast is how json.Marshal ends a CatalogMetadata without content: content is the last field
// of the spec, and the spec the object's last.
var contentLast = []byte(`"content":null}}`)

// marshalObject is json.Marshal(m) but for the blob, which is copied in as the store holds it (compact
// JSON, validated when the catalog was stored) instead of being scanned and compacted again, as
// encoding/json does with every json.Marshaler's output (that was a third of catalogd's CPU serving
// lists of large bundles). Strings of the blob keep '<', '>' and '&' as they are rather than
// escaping them (\u003c…); both are the same JSON.
func marshalObject(m *metadatav1alpha1.CatalogMetadata) ([]byte, error) {
	content := m.Spec.Content.Raw
	if len(content) == 0 {
		return json.Marshal(m)
	}
	shell := *m
	shell.Spec.Content = runtime.RawExtension{}
	b, err := json.Marshal(&shell)
	if err != nil || !bytes.HasSuffix(b, contentLast) {
		return json.Marshal(m)
	}
	b = append(b[:len(b)-len(contentLast)+len(`"content":`)], content...)
	return append(b, '}', '}'), nil
}

// estimateListSize is about the encoded size of l: its blobs plus the metadata of each item.
func estimateListSize(l *metadatav1alpha1.CatalogMetadataList) int {
	n := 0
	for i := range l.Items {
		n += len(l.Items[i].Spec.Content.Raw) + 512
	}
	return n
}
