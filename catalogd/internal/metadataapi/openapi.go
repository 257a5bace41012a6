package metadataapi

// OpenAPI documents of the CatalogMetadata API, served as kube-aggregator fetches them (every
// minute, through the APIService's handler) and kubectl reads them:
//
//   - /openapi/v2, Swagger 2.0: the aggregator GETs it with Accept: application/json (and
//     If-None-Match once it has an ETag), keeps the paths under /apis/<group>/<version>/ and
//     merges the definitions into kube-apiserver's /openapi/v2, renaming ours where they differ.
//   - /openapi/v3, the index (a kube-openapi handler3.OpenAPIV3Discovery): the aggregator merges
//     its paths into kube-apiserver's index, so it names only our group version, with a URL
//     carrying ?hash=<ETag of the document>.
//   - /openapi/v3/apis/<group>/<version>, OpenAPI 3.0: kube-apiserver proxies clients' requests
//     here unchanged (kubectl explain asks for JSON, other clients for protobuf).
//
// The documents are built once from the generated definitions, named and marked with their
// GroupVersionKinds as k8s.io/apiserver does, and served as JSON or gnostic protobuf.

import (
	"bytes"
	"cmp"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"github.com/munnerz/goautoneg"
	"google.golang.org/protobuf/proto"
	extensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	builderutil "k8s.io/kube-openapi/pkg/builder3/util"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/openapiconv"
	"k8s.io/kube-openapi/pkg/schemamutation"
	"k8s.io/kube-openapi/pkg/spec3"
	openapiutil "k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
)

const (
	openAPIV2Path = "/openapi/v2"
	openAPIV3Path = "/openapi/v3"

	v2DefinitionPrefix = "#/definitions/"
	v3SchemaPrefix     = "#/components/schemas/"

	extensionGVK    = "x-kubernetes-group-version-kind"
	extensionAction = "x-kubernetes-action"

	// The protobuf media types (gnostic's OpenAPI messages) kube-openapi serves; the "@" forms are
	// the deprecated spellings clients still send.
	protoV2         = "com.github.proto-openapi.spec.v2.v1.0+protobuf"
	protoV2Legacy   = "com.github.proto-openapi.spec.v2@v1.0+protobuf"
	protoV3         = "com.github.proto-openapi.spec.v3.v1.0+protobuf"
	protoV3Legacy   = "com.github.proto-openapi.spec.v3@v1.0+protobuf"
	resourceKind    = "CatalogMetadata"
	resourcePlural  = "catalogmetadata"
	openAPITitle    = "catalogd CatalogMetadata"
	openAPIV3Format = "3.0.0"
)

// openAPIGroupVersion is the group version's key in the OpenAPI v3 index, and its document's path
// under /openapi/v3.
var openAPIGroupVersion = "apis/" + metadatav1alpha1.SchemeGroupVersion.Group + "/" + metadatav1alpha1.SchemeGroupVersion.Version

// openAPIDocs serves the OpenAPI documents of the CatalogMetadata API (see ServeHTTP).
type openAPIDocs struct {
	v2      servedDoc
	v3Index servedDoc
	v3      servedDoc
}

// servedDoc is one document in the representations it is served in.
type servedDoc struct {
	json []byte
	// proto is the gnostic protobuf of json, served as protoType; nil when JSON is the only one.
	proto     []byte
	protoType string
	// also are the other media subtypes (of application/) that select proto.
	also []string
	// etag is the upper-case hex SHA-512 of json, unquoted (the ?hash= of the v3 URL): the same on
	// every replica serving the same binary.
	etag string
}

// newOpenAPIDocs builds the documents; an error means the generated definitions are incomplete
// (a referenced type without a definition), which is a bug of this binary.
func newOpenAPIDocs() (*openAPIDocs, error) {
	gvks, err := definitionGVKs()
	if err != nil {
		return nil, fmt.Errorf("openapi: GroupVersionKinds of the definitions: %w", err)
	}
	v2Defs, err := documentDefinitions(v2DefinitionPrefix, false, gvks)
	if err != nil {
		return nil, fmt.Errorf("openapi v2: %w", err)
	}
	v3Defs, err := documentDefinitions(v3SchemaPrefix, true, gvks)
	if err != nil {
		return nil, fmt.Errorf("openapi v3: %w", err)
	}
	paths, err := resourcePaths(openAPIDefinitions(func(string) spec.Ref { return spec.Ref{} }))
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	info := &spec.Info{InfoProps: spec.InfoProps{Title: openAPITitle, Version: metadatav1alpha1.SchemeGroupVersion.Version}}
	swagger := &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger: "2.0", Info: info, Paths: paths, Definitions: v2Defs,
	}}
	v3 := &spec3.OpenAPI{
		Version: openAPIV3Format, Info: info, Paths: openapiconv.ConvertPaths(paths),
		Components: &spec3.Components{Schemas: make(map[string]*spec.Schema, len(v3Defs))},
	}
	for name := range v3Defs {
		s := v3Defs[name]
		v3.Components.Schemas[name] = &s
	}
	d := &openAPIDocs{}
	if d.v2, err = newServedDoc(swagger, protoV2, v2Proto, protoV2Legacy); err != nil {
		return nil, fmt.Errorf("openapi v2: %w", err)
	}
	if d.v3, err = newServedDoc(v3, protoV3, handler3.ToV3ProtoBinary, protoV3Legacy); err != nil {
		return nil, fmt.Errorf("openapi v3: %w", err)
	}
	index := handler3.OpenAPIV3Discovery{Paths: map[string]handler3.OpenAPIV3DiscoveryGroupVersion{
		openAPIGroupVersion: {ServerRelativeURL: v3URL(d.v3.etag)},
	}}
	if d.v3Index, err = newServedDoc(index, "", nil); err != nil {
		return nil, fmt.Errorf("openapi v3 index: %w", err)
	}
	return d, nil
}

// newServedDoc marshals doc to JSON and, with toProto, to protobuf served as protoType.
func newServedDoc(doc any, protoType string, toProto func([]byte) ([]byte, error), also ...string) (servedDoc, error) {
	j, err := json.Marshal(doc)
	if err != nil {
		return servedDoc{}, err
	}
	sum := sha512.Sum512(j)
	d := servedDoc{json: j, etag: fmt.Sprintf("%X", sum)}
	if toProto != nil {
		if d.proto, err = toProto(j); err != nil {
			return servedDoc{}, fmt.Errorf("converting to protobuf: %w", err)
		}
		d.protoType, d.also = protoType, also
	}
	return d, nil
}

func v2Proto(j []byte) ([]byte, error) {
	doc, err := openapi_v2.ParseDocument(j)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(doc)
}

// v3URL is the server-relative URL of the v3 document with the given ETag, as handler3 builds it.
func v3URL(etag string) string {
	u := url.URL{Path: path.Join(openAPIV3Path, openAPIGroupVersion), RawQuery: url.Values{"hash": {etag}}.Encode()}
	return u.String()
}

// ServeHTTP answers GET and HEAD of /openapi/v2, /openapi/v3 and
// /openapi/v3/apis/metadata.catalogd.operatorframework.io/v1alpha1, and 404 for any other path.
// Every answer carries an ETag; a matching If-None-Match is 304 Not Modified.
func (d *openAPIDocs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var doc *servedDoc
	switch r.URL.Path {
	case openAPIV2Path:
		doc = &d.v2
	case openAPIV3Path:
		doc = &d.v3Index
	case openAPIV3Path + "/" + openAPIGroupVersion:
		doc = &d.v3
	default:
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, fmt.Sprintf("%s is read-only (use GET)", r.URL.Path), http.StatusMethodNotAllowed)
		return
	}
	body, contentType, ok := doc.negotiate(r.Header.Get("Accept"))
	if doc.proto != nil {
		w.Header().Add("Vary", "Accept")
	}
	if !ok {
		http.Error(w, fmt.Sprintf("%s is served as application/json or application/%s", r.URL.Path, doc.protoType),
			http.StatusNotAcceptable)
		return
	}
	if doc == &d.v3 {
		if hash := r.URL.Query().Get("hash"); hash != "" {
			if hash != doc.etag {
				// A stale URL (e.g. from an index cached before an upgrade): send the client to the current one.
				http.Redirect(w, r, v3URL(doc.etag), http.StatusMovedPermanently)
				return
			}
			// The URL names this exact content: cacheable for good, as kube-apiserver serves it.
			w.Header().Set("Cache-Control", "public, immutable")
			w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
		}
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Etag", strconv.Quote(doc.etag))
	// ServeContent answers If-None-Match (and Range, HEAD) from these headers. No Last-Modified:
	// replicas would differ.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// negotiate picks the representation for an Accept header as kube-openapi does: the first clause,
// by preference, that JSON or the protobuf media type satisfies. A document without protobuf is
// JSON whatever the client accepts (as kube-apiserver serves the v3 index).
func (doc *servedDoc) negotiate(accept string) (body []byte, contentType string, ok bool) {
	if doc.proto == nil {
		return doc.json, "application/json", true
	}
	if accept == "" {
		accept = "*/*"
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		if clause.Q == 0 || (clause.Type != "application" && clause.Type != "*") {
			continue
		}
		switch {
		case clause.SubType == "json" || clause.SubType == "*":
			return doc.json, "application/json", true
		case clause.SubType == doc.protoType || slices.Contains(doc.also, clause.SubType):
			return doc.proto, "application/" + doc.protoType, true
		}
	}
	return nil, "", false
}

// openAPIDefinitions are the generated definitions: meta/v1 (and the rest apiextensions-apiserver
// generates) and ours, keyed by model name, with references made by ref.
func openAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := extensionsopenapi.GetOpenAPIDefinitions(ref)
	for k, v := range metadatav1alpha1.GetOpenAPIDefinitions(ref) {
		defs[k] = v
	}
	return defs
}

// definitionName is a definition's name in the documents, as runtime.Scheme.ToOpenAPIDefinitionName
// and k8s.io/apiserver name it: the model name it is generated under (io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta),
// or a Go type name (k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta) with the domain reversed.
func definitionName(key string) string {
	if strings.Contains(key, "/") {
		return openapiutil.ToRESTFriendlyName(key)
	}
	return key
}

// documentRoots are the definitions the documents hold, with all those they reference.
func documentRoots() []string {
	return []string{
		metadatav1alpha1.CatalogMetadata{}.OpenAPIModelName(),
		metadatav1alpha1.CatalogMetadataList{}.OpenAPIModelName(),
		metav1.WatchEvent{}.OpenAPIModelName(),
		metav1.Status{}.OpenAPIModelName(),
	}
}

// documentDefinitions are the definitions of documentRoots and those they depend on, by name, with
// references under prefix and the x-kubernetes-group-version-kind of gvks: for v3, with references
// that have siblings wrapped in allOf, as kube-openapi's v3 builder does.
func documentDefinitions(prefix string, v3 bool, gvks map[string][]any) (map[string]spec.Schema, error) {
	all := openAPIDefinitions(func(key string) spec.Ref {
		return spec.MustCreateRef(prefix + common.EscapeJsonPointer(definitionName(key)))
	})
	out := map[string]spec.Schema{}
	var add func(key, from string) error
	add = func(key, from string) error {
		name := common.EscapeJsonPointer(definitionName(key))
		if _, done := out[name]; done {
			return nil
		}
		def, ok := all[key]
		if !ok {
			return fmt.Errorf("definition %q (referenced by %q) is not generated", key, from)
		}
		out[name] = documentSchema(def.Schema, v3, gvks[name])
		for _, dep := range def.Dependencies {
			if err := add(dep, key); err != nil {
				return err
			}
		}
		return nil
	}
	for _, root := range documentRoots() {
		if err := add(root, "the documents"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// documentSchema is a generated schema as a document holds it: in v2 the schema embedded for v2 if
// there is one and without defaults, as kube-apiserver serves its v2 definitions (so that the
// aggregator finds the meta/v1 ones equal to its own and merges them rather than renaming ours);
// never the embedding extension; and gvks (when any) as x-kubernetes-group-version-kind.
func documentSchema(generated spec.Schema, v3 bool, gvks []any) spec.Schema {
	s := spec.Schema{
		VendorExtensible:   generated.VendorExtensible,
		SchemaProps:        generated.SchemaProps,
		SwaggerSchemaProps: generated.SwaggerSchemaProps,
	}
	if embedded, ok := s.Extensions[common.ExtensionV2Schema].(spec.Schema); ok && !v3 {
		s = embedded
	}
	extensions := spec.Extensions{}
	for k, v := range s.Extensions {
		extensions[k] = v
	}
	delete(extensions, common.ExtensionV2Schema)
	if len(gvks) > 0 {
		extensions[extensionGVK] = gvks
	}
	s.Extensions = nil
	if len(extensions) > 0 {
		s.Extensions = extensions
	}
	if v3 {
		return *builderutil.WrapRefs(&s)
	}
	return *withoutDefaults(&s)
}

// withoutDefaults is s with no default anywhere in it; s is not changed.
func withoutDefaults(s *spec.Schema) *spec.Schema {
	w := schemamutation.Walker{
		RefCallback: schemamutation.RefCallbackNoop,
		SchemaCallback: func(s *spec.Schema) *spec.Schema {
			if s.Default == nil {
				return s
			}
			pruned := *s
			pruned.Default = nil
			return &pruned
		},
	}
	return w.WalkSchema(s)
}

// definitionGVKs are the x-kubernetes-group-version-kind values by definition name: the served
// GroupVersionKinds of a scheme holding our types and meta/v1's (WatchEvent, Status, ...), as
// k8s.io/apiserver's definition namer gives them (without the internal version).
func definitionGVKs() (map[string][]any, error) {
	scheme := runtime.NewScheme()
	if err := metadatav1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	byName := map[string][]schema.GroupVersionKind{}
	for gvk := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		name, err := scheme.ToOpenAPIDefinitionName(gvk)
		if err != nil {
			return nil, err
		}
		byName[name] = append(byName[name], gvk)
	}
	out := make(map[string][]any, len(byName))
	for name, gvks := range byName {
		slices.SortFunc(gvks, func(a, b schema.GroupVersionKind) int {
			return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Version, b.Version), cmp.Compare(a.Kind, b.Kind))
		})
		list := make([]any, len(gvks))
		for i, gvk := range gvks {
			list[i] = gvkExtension(gvk)
		}
		out[name] = list
	}
	return out, nil
}

func gvkExtension(gvk schema.GroupVersionKind) map[string]any {
	return map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

// listParameters are the query parameters of list and watch, described as metav1.ListOptions
// documents them.
var listParameters = []string{
	"allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
	"resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch",
}

// resourcePaths are the v2 paths of catalogmetadata: get of one object, and list or watch.
func resourcePaths(defs map[string]common.OpenAPIDefinition) (*spec.Paths, error) {
	listQuery, err := queryParameters(defs, metav1.ListOptions{}.OpenAPIModelName(), listParameters...)
	if err != nil {
		return nil, err
	}
	getQuery, err := queryParameters(defs, metav1.GetOptions{}.OpenAPIModelName(), "resourceVersion")
	if err != nil {
		return nil, err
	}
	name := spec.Parameter{
		ParamProps:        spec.ParamProps{Name: "name", In: "path", Required: true, Description: "name of the " + resourceKind},
		SimpleSchema:      spec.SimpleSchema{Type: "string"},
		CommonValidations: spec.CommonValidations{UniqueItems: true},
	}
	gv := metadatav1alpha1.SchemeGroupVersion
	base := "/apis/" + gv.Group + "/" + gv.Version + "/" + resourcePlural
	object := v2DefinitionPrefix + metadatav1alpha1.CatalogMetadata{}.OpenAPIModelName()
	list := v2DefinitionPrefix + metadatav1alpha1.CatalogMetadataList{}.OpenAPIModelName()
	return &spec.Paths{Paths: map[string]spec.PathItem{
		base: {PathItemProps: spec.PathItemProps{
			Get: operation("list", "list", "list or watch objects of kind "+resourceKind, list,
				"application/json", "application/json;stream=watch"),
			Parameters: listQuery,
		}},
		base + "/{name}": {PathItemProps: spec.PathItemProps{
			Get:        operation("get", "read", "read the specified "+resourceKind, object, "application/json"),
			Parameters: append([]spec.Parameter{name}, getQuery...),
		}},
	}}, nil
}

// operation is a GET of catalogmetadata answering 200 with the definition ref, identified by verb
// and marked with the action and the kind as kube-apiserver marks its operations (kubectl explain
// finds the kind of a resource by them).
func operation(action, verb, description, ref string, produces ...string) *spec.Operation {
	gv := metadatav1alpha1.SchemeGroupVersion
	op := &spec.Operation{OperationProps: spec.OperationProps{
		ID:          verb + camelGroup() + upperFirst(gv.Version) + resourceKind,
		Description: description,
		Consumes:    []string{"*/*"},
		Produces:    produces,
		Schemes:     []string{"https"},
		Tags:        []string{lowerFirst(camelGroup()) + "_" + gv.Version},
		Responses: &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{
			http.StatusOK: {ResponseProps: spec.ResponseProps{
				Description: "OK", Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(ref)}},
			}},
			http.StatusUnauthorized: {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}},
		}}},
	}}
	op.Extensions = spec.Extensions{
		extensionAction: action,
		extensionGVK:    gvkExtension(gv.WithKind(resourceKind)),
	}
	return op
}

// camelGroup is the group as kube-apiserver spells it in operation IDs and tags:
// metadata.catalogd.operatorframework.io is MetadataCatalogdOperatorframeworkIo.
func camelGroup() string {
	var b strings.Builder
	for _, part := range strings.Split(metadatav1alpha1.SchemeGroupVersion.Group, ".") {
		b.WriteString(upperFirst(part))
	}
	return b.String()
}

func upperFirst(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }

// queryParameters are the named properties of the options definition as query parameters, with
// the type, format and description the definition gives them.
func queryParameters(defs map[string]common.OpenAPIDefinition, options string, names ...string) ([]spec.Parameter, error) {
	def, ok := defs[options]
	if !ok {
		return nil, fmt.Errorf("definition %q (the query parameters) is not generated", options)
	}
	params := make([]spec.Parameter, 0, len(names))
	for _, name := range names {
		prop, ok := def.Schema.Properties[name]
		if !ok || len(prop.Type) != 1 {
			return nil, fmt.Errorf("definition %q has no property %q of a single type", options, name)
		}
		params = append(params, spec.Parameter{
			ParamProps:        spec.ParamProps{Name: name, In: "query", Description: prop.Description},
			SimpleSchema:      spec.SimpleSchema{Type: prop.Type[0], Format: prop.Format},
			CommonValidations: spec.CommonValidations{UniqueItems: true},
		})
	}
	return params, nil
}
