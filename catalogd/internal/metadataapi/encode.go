package metadataapi

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
)

// form is what an answer is encoded as: the object itself, a kubectl Table, or metadata only; as JSON
// or YAML. It comes from the request's Accept header, as kube-apiserver negotiates it.
type form struct {
	// as is "" (the object), "Table", "PartialObjectMetadata" or "PartialObjectMetadataList".
	as string
	// asVersion is the meta.k8s.io version of a Table or metadata answer (v1 or v1beta1).
	asVersion string
	yaml      bool
}

// negotiate picks the first acceptable media type of accept; ok is false when none is (406).
func negotiate(accept string) (f form, ok bool) {
	if strings.TrimSpace(accept) == "" {
		return form{}, true
	}
	for _, part := range strings.Split(accept, ",") {
		mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mediaType {
		case "application/json", "application/*", "*/*":
		case "application/yaml":
			f.yaml = true
		default:
			continue
		}
		as := params["as"]
		if as == "" {
			return form{yaml: f.yaml}, true
		}
		if params["g"] != metav1.GroupName || (params["v"] != "v1" && params["v"] != "v1beta1") {
			continue
		}
		switch as {
		case "Table", "PartialObjectMetadata", "PartialObjectMetadataList":
			return form{as: as, asVersion: params["v"], yaml: f.yaml}, true
		}
		f = form{}
	}
	return form{}, false
}

func (f form) contentType() string {
	base := "application/json"
	if f.yaml {
		base = "application/yaml"
	}
	if f.as == "" {
		return base
	}
	return base + ";as=" + f.as + ";g=" + metav1.GroupName + ";v=" + f.asVersion
}

// notAcceptable is the answer to an Accept header with no media type this API serves.
func notAcceptable(accept string) error {
	return notAcceptableError(fmt.Sprintf("only the following media types are accepted: application/json, application/yaml, and as=Table or as=PartialObjectMetadata(List) of meta.k8s.io/v1 (got %s)", quoteShort(accept)))
}

// notAcceptableError is 406 Not Acceptable with message.
func notAcceptableError(message string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable, Message: message,
	}}
}

// needsContent says whether an answer in form f shows the blobs: objects do, tables only with
// includeObject=Object, metadata never.
func (f form) needsContent(includeObject string) bool {
	return f.as == "" || (f.as == "Table" && metav1.IncludeObjectPolicy(includeObject) == metav1.IncludeObject)
}

// convert turns obj (a CatalogMetadata or CatalogMetadataList) into what f asks for. includeObject
// is the request's includeObject parameter, for Tables (default Metadata, as kube-apiserver).
func (f form) convert(obj runtime.Object, includeObject string) (any, error) {
	switch f.as {
	case "":
		if l, ok := obj.(*metadatav1alpha1.CatalogMetadataList); ok {
			l.TypeMeta = metav1.TypeMeta{APIVersion: metadatav1alpha1.SchemeGroupVersion.String(), Kind: "CatalogMetadataList"}
		}
		return obj, nil
	case "Table":
		return tableOf(obj, f.asVersion, includeObject)
	case "PartialObjectMetadata":
		m, ok := obj.(*metadatav1alpha1.CatalogMetadata)
		if !ok {
			return nil, notAcceptableError("as=PartialObjectMetadata is for get and watch; use as=PartialObjectMetadataList to list")
		}
		return partial(m, f.asVersion), nil
	default: // PartialObjectMetadataList
		l, ok := obj.(*metadatav1alpha1.CatalogMetadataList)
		if !ok {
			return nil, notAcceptableError("as=PartialObjectMetadataList is for list; use as=PartialObjectMetadata to get or watch")
		}
		out := &metav1.PartialObjectMetadataList{
			TypeMeta: metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.Group + "/" + f.asVersion, Kind: "PartialObjectMetadataList"},
			ListMeta: l.ListMeta,
			Items:    make([]metav1.PartialObjectMetadata, len(l.Items)),
		}
		for i := range l.Items {
			out.Items[i] = *partial(&l.Items[i], f.asVersion)
		}
		return out, nil
	}
}

func partial(m *metadatav1alpha1.CatalogMetadata, version string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: metav1.GroupName + "/" + version, Kind: "PartialObjectMetadata"},
		ObjectMeta: m.ObjectMeta,
	}
}

// tableOf is the kubectl table of obj; includeObject says what each row carries: None, Object or
// Metadata (the default).
func tableOf(obj runtime.Object, version, includeObject string) (*metav1.Table, error) {
	table, err := (&REST{}).ConvertToTable(context.Background(), obj, nil)
	if err != nil {
		return nil, err
	}
	table.APIVersion, table.Kind = metav1.GroupName+"/"+version, "Table"
	for i := range table.Rows {
		m, _ := table.Rows[i].Object.Object.(*metadatav1alpha1.CatalogMetadata)
		switch metav1.IncludeObjectPolicy(includeObject) {
		case metav1.IncludeNone:
			table.Rows[i].Object = runtime.RawExtension{}
		case metav1.IncludeObject:
		case metav1.IncludeMetadata, "":
			if m != nil {
				table.Rows[i].Object = runtime.RawExtension{Object: partial(m, version)}
			}
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid includeObject %s: want None, Object or Metadata", quoteShort(includeObject)))
		}
	}
	return table, nil
}

// marshal encodes v as JSON, or YAML for f.yaml.
func (f form) marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || !f.yaml {
		return b, err
	}
	return yaml.JSONToYAML(b)
}

// gzipAbove is the answer size from which a client that accepts gzip gets it compressed, as
// kube-apiserver does (its APIResponseCompression threshold).
const gzipAbove = 128 << 10

// writeAnswer writes an encoded answer with status code.
func writeAnswer(w http.ResponseWriter, r *http.Request, code int, contentType string, body []byte) {
	out, done := startAnswer(w, r, code, contentType, len(body))
	_, _ = out.Write(body)
	done()
}

// startAnswer writes the headers of an answer of about size bytes and returns where its body goes:
// through gzip when size is gzipAbove or more and the client accepts it. done ends the body.
func startAnswer(w http.ResponseWriter, r *http.Request, code int, contentType string, size int) (out io.Writer, done func()) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache, private")
	h.Set("X-Content-Type-Options", "nosniff")
	if size < gzipAbove || !acceptsGzip(r) {
		w.WriteHeader(code)
		return w, func() {}
	}
	h.Set("Content-Encoding", "gzip")
	h.Add("Vary", "Accept-Encoding")
	w.WriteHeader(code)
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	return gz, func() { _ = gz.Close() }
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if enc, _, _ := strings.Cut(strings.TrimSpace(part), ";"); enc == "gzip" {
			return true
		}
	}
	return false
}

// writeObject answers 200 with obj in form f.
func writeObject(w http.ResponseWriter, r *http.Request, f form, obj runtime.Object) {
	if l, ok := obj.(*metadatav1alpha1.CatalogMetadataList); ok && streamsList(f) {
		writeList(w, r, f, l)
		return
	}
	if m, ok := obj.(*metadatav1alpha1.CatalogMetadata); ok && f == (form{}) {
		body, err := marshalObject(m)
		if err != nil {
			writeError(w, r, apierrors.NewInternalError(err))
			return
		}
		writeAnswer(w, r, http.StatusOK, f.contentType(), body)
		return
	}
	v, err := f.convert(obj, r.URL.Query().Get("includeObject"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	body, err := f.marshal(v)
	if err != nil {
		writeError(w, r, apierrors.NewInternalError(err))
		return
	}
	writeAnswer(w, r, http.StatusOK, f.contentType(), body)
}

// writeError answers err as a metav1.Status: an API error with its own code, anything else 500.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	s := status.Status()
	s.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	if s.Code == 0 {
		s.Code = http.StatusInternalServerError
	}
	if s.Details != nil && s.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(s.Details.RetryAfterSeconds)))
	}
	body, _ := json.Marshal(&s)
	writeAnswer(w, r, int(s.Code), "application/json", body)
}
