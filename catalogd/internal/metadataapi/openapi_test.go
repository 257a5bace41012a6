package metadataapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	restclient "k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/aggregator"
	openapihandler "k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	openapiproto "k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/validation/spec"
	explainv2 "k8s.io/kubectl/pkg/explain/v2"
	kubectlopenapi "k8s.io/kubectl/pkg/util/openapi"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
)

// The tests in this file fetch the OpenAPI documents as kube-apiserver's aggregator
// (k8s.io/kube-aggregator/pkg/controllers/openapi{,v3}/aggregator) and kubectl do, and read them
// with the libraries those use.

const v3DocPath = openAPIV3Path + "/apis/metadata.catalogd.operatorframework.io/v1alpha1"

var (
	catalogMetadataName     = metadatav1alpha1.CatalogMetadata{}.OpenAPIModelName()
	catalogMetadataListName = metadatav1alpha1.CatalogMetadataList{}.OpenAPIModelName()
	catalogMetadataGVK      = metadatav1alpha1.SchemeGroupVersion.WithKind("CatalogMetadata")
	objectPath              = "/apis/metadata.catalogd.operatorframework.io/v1alpha1/catalogmetadata/{name}"
	listPath                = "/apis/metadata.catalogd.operatorframework.io/v1alpha1/catalogmetadata"
)

func serveOpenAPI(t *testing.T) *httptest.Server {
	t.Helper()
	docs, err := newOpenAPIDocs()
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(docs)
	t.Cleanup(ts.Close)
	return ts
}

// fetch sends method to path (with its query) with the headers given as name, value pairs; redirects are
// returned, not followed.
func fetch(t *testing.T, ts *httptest.Server, method, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	return roundTrip(t, method, ts.URL+path, headers...)
}

func fetchOK(t *testing.T, ts *httptest.Server, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	resp, body := fetch(t, ts, http.MethodGet, path, headers...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return resp, body
}

func wantGVKs(t *testing.T, what string, ext spec.Extensions, want ...map[string]any) {
	t.Helper()
	got, _ := json.Marshal(ext[extensionGVK])
	wanted, _ := json.Marshal(want)
	if !bytes.Equal(got, wanted) {
		t.Errorf("%s: %s = %s, want %s", what, extensionGVK, got, wanted)
	}
}

func wantOperation(t *testing.T, path string, op *spec.Operation, action, response string) {
	t.Helper()
	if op == nil {
		t.Fatalf("%s: no get operation", path)
	}
	if got := op.Extensions[extensionAction]; got != action {
		t.Errorf("%s: %s = %v, want %s", path, extensionAction, got, action)
	}
	gvk, _ := json.Marshal(op.Extensions[extensionGVK])
	if want := `{"group":"metadata.catalogd.operatorframework.io","kind":"CatalogMetadata","version":"v1alpha1"}`; string(gvk) != want {
		t.Errorf("%s: %s = %s, want %s", path, extensionGVK, gvk, want)
	}
	if ref := op.Responses.StatusCodeResponses[http.StatusOK].Schema.Ref.String(); ref != "#/definitions/"+response {
		t.Errorf("%s: 200 is %q, want %s", path, ref, response)
	}
}

func TestOpenAPIV2AsTheAggregatorDownloadsIt(t *testing.T) {
	ts := serveOpenAPI(t)
	resp, body := fetchOK(t, ts, openAPIV2Path, "Accept", "application/json")
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if etag := resp.Header.Get("Etag"); !strings.HasPrefix(etag, `"`) || len(etag) != 130 {
		t.Errorf("Etag %q, want a quoted SHA-512", etag)
	}
	var doc spec.Swagger
	if err := doc.UnmarshalJSON(body); err != nil {
		t.Fatal(err)
	}
	if doc.Swagger != "2.0" || doc.Info == nil || doc.Info.Title == "" {
		t.Errorf("swagger %q, info %+v", doc.Swagger, doc.Info)
	}
	gvk := gvkExtension(catalogMetadataGVK)
	wantGVKs(t, catalogMetadataName, doc.Definitions[catalogMetadataName].Extensions, gvk)
	wantGVKs(t, catalogMetadataListName, doc.Definitions[catalogMetadataListName].Extensions,
		gvkExtension(metadatav1alpha1.SchemeGroupVersion.WithKind("CatalogMetadataList")))
	wantGVKs(t, "Status", doc.Definitions[metav1.Status{}.OpenAPIModelName()].Extensions,
		map[string]any{"group": "", "version": "v1", "kind": "Status"})
	for _, name := range []string{"ObjectMeta", "ListMeta", "Time", "ManagedFieldsEntry", "OwnerReference", "FieldsV1", "WatchEvent"} {
		if _, ok := doc.Definitions["io.k8s.apimachinery.pkg.apis.meta.v1."+name]; !ok {
			t.Errorf("no definition of meta/v1 %s", name)
		}
	}
	wantOperation(t, objectPath, doc.Paths.Paths[objectPath].Get, "get", catalogMetadataName)
	wantOperation(t, listPath, doc.Paths.Paths[listPath].Get, "list", catalogMetadataListName)
	var params []string
	for _, p := range doc.Paths.Paths[listPath].Parameters {
		if p.In == "query" && p.Description != "" {
			params = append(params, p.Name)
		}
	}
	if !slices.Equal(params, listParameters) {
		t.Errorf("list query parameters %v, want %v", params, listParameters)
	}

	mergeAsTheAggregator(t, &doc)
}

// mergeAsTheAggregator merges doc into a kube-apiserver document as kube-aggregator does: it keeps
// the paths of the APIService's group version and merges the definitions, renaming ours where they
// differ from kube-apiserver's. kube-apiserver's meta/v1 definitions are the generated ones with
// the defaults pruned (k8s.io/apiserver/pkg/server/routes.OpenAPI.InstallV2): ours must equal them.
func mergeAsTheAggregator(t *testing.T, doc *spec.Swagger) {
	t.Helper()
	generated := openAPIDefinitions(func(key string) spec.Ref { return spec.MustCreateRef(v2DefinitionPrefix + key) })
	kube := &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Paths:       &spec.Paths{Paths: map[string]spec.PathItem{"/api/v1/pods": {}}},
		Definitions: spec.Definitions{},
	}}
	for name, ours := range doc.Definitions {
		if !strings.HasPrefix(name, "io.k8s.") {
			continue
		}
		def := generated[name].Schema
		if _, ok := ours.Extensions[extensionGVK]; ok { // WatchEvent, Status: kube-apiserver's are core/v1 kinds
			kind := name[strings.LastIndex(name, ".")+1:]
			def.Extensions = spec.Extensions{extensionGVK: []any{map[string]any{"group": "", "version": "v1", "kind": kind}}}
		}
		kube.Definitions[name] = def
	}
	kube.Definitions = openapihandler.PruneDefaults(kube.Definitions)
	kept := aggregator.FilterSpecByPathsWithoutSideEffects(doc, []string{"/apis/metadata.catalogd.operatorframework.io/v1alpha1/"})
	if err := aggregator.MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters(kube, kept); err != nil {
		t.Fatal(err)
	}
	if len(kube.Paths.Paths) != 3 || len(kube.Definitions) != len(doc.Definitions) {
		t.Errorf("merged by the aggregator: %d paths, %d definitions, want 3 and %d", len(kube.Paths.Paths), len(kube.Definitions), len(doc.Definitions))
	}
	for name := range kube.Definitions {
		if _, ours := doc.Definitions[name]; !ours {
			t.Errorf("the aggregator renamed a definition to %s: it differs from kube-apiserver's", name)
		}
	}
}

// refs are the values of every "$ref" in a JSON document.
func refs(t *testing.T, body []byte) []string {
	t.Helper()
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if s, ok := child.(string); ok && k == "$ref" {
					out = append(out, s)
				}
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	walk(doc)
	return out
}

func TestOpenAPIEveryRefResolves(t *testing.T) {
	ts := serveOpenAPI(t)
	_, v2 := fetchOK(t, ts, openAPIV2Path)
	var swagger spec.Swagger
	if err := swagger.UnmarshalJSON(v2); err != nil {
		t.Fatal(err)
	}
	_, v3 := fetchOK(t, ts, v3DocPath)
	var openapi spec3.OpenAPI
	if err := openapi.UnmarshalJSON(v3); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		doc    []byte
		prefix string
		has    func(string) bool
	}{
		{v2, v2DefinitionPrefix, func(n string) bool { _, ok := swagger.Definitions[n]; return ok }},
		{v3, v3SchemaPrefix, func(n string) bool { _, ok := openapi.Components.Schemas[n]; return ok }},
	} {
		all := refs(t, tc.doc)
		if len(all) < 10 {
			t.Errorf("only %d refs", len(all))
		}
		for _, ref := range all {
			name, ok := strings.CutPrefix(ref, tc.prefix)
			if !ok || !tc.has(name) {
				t.Errorf("$ref %q does not resolve in the document", ref)
			}
		}
	}
}

func TestOpenAPIV3IndexPointsAtTheDocument(t *testing.T) {
	ts := serveOpenAPI(t)
	_, body := fetchOK(t, ts, openAPIV3Path)
	var index handler3.OpenAPIV3Discovery
	if err := json.Unmarshal(body, &index); err != nil {
		t.Fatal(err)
	}
	gv, ok := index.Paths["apis/metadata.catalogd.operatorframework.io/v1alpha1"]
	if !ok || len(index.Paths) != 1 {
		t.Fatalf("index %s, want exactly our group version", body)
	}
	u, err := url.Parse(gv.ServerRelativeURL)
	if err != nil || u.Path != v3DocPath {
		t.Fatalf("serverRelativeURL %q", gv.ServerRelativeURL)
	}
	resp, _ := fetchOK(t, ts, v3DocPath, "Accept", "application/json")
	if etag := strconv.Quote(u.Query().Get("hash")); etag != resp.Header.Get("Etag") {
		t.Errorf("hash in the index %s, document's ETag %s", etag, resp.Header.Get("Etag"))
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "" {
		t.Errorf("without ?hash= Cache-Control %q", cc)
	}
	resp, _ = fetchOK(t, ts, gv.ServerRelativeURL, "Accept", "application/json")
	if cc := resp.Header.Get("Cache-Control"); cc != "public, immutable" || resp.Header.Get("Expires") == "" {
		t.Errorf("with the current ?hash= Cache-Control %q, Expires %q", cc, resp.Header.Get("Expires"))
	}
	resp, _ = fetch(t, ts, http.MethodGet, v3DocPath+"?hash=0BSOLETE")
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != gv.ServerRelativeURL {
		t.Errorf("stale ?hash=: %d to %q, want 301 to %s", resp.StatusCode, resp.Header.Get("Location"), gv.ServerRelativeURL)
	}
}

func TestOpenAPIV3Document(t *testing.T) {
	ts := serveOpenAPI(t)
	_, body := fetchOK(t, ts, v3DocPath, "Accept", "application/json")
	var doc spec3.OpenAPI
	if err := doc.UnmarshalJSON(body); err != nil {
		t.Fatal(err)
	}
	if doc.Version != "3.0.0" || doc.Components == nil {
		t.Fatalf("openapi %q, components %v", doc.Version, doc.Components)
	}
	cm, ok := doc.Components.Schemas[catalogMetadataName]
	if !ok {
		t.Fatalf("no schema %s", catalogMetadataName)
	}
	wantGVKs(t, catalogMetadataName, cm.Extensions, gvkExtension(catalogMetadataGVK))
	objectMeta := v3SchemaPrefix + metav1.ObjectMeta{}.OpenAPIModelName()
	if ref := cm.Properties["metadata"].AllOf; len(ref) != 1 || ref[0].Ref.String() != objectMeta {
		t.Errorf("metadata %+v, want allOf the ObjectMeta ref (a ref with a default)", cm.Properties["metadata"])
	}
	for path, action := range map[string]string{objectPath: "get", listPath: "list"} {
		p, ok := doc.Paths.Paths[path]
		if !ok || p.Get == nil {
			t.Fatalf("no GET %s", path)
		}
		if got := p.Get.Extensions[extensionAction]; got != action {
			t.Errorf("%s: %s = %v", path, extensionAction, got)
		}
		if p.Get.Responses.StatusCodeResponses[http.StatusOK].Content["application/json"] == nil {
			t.Errorf("%s: no application/json 200", path)
		}
	}
}

func TestOpenAPIETagNotModified(t *testing.T) {
	ts := serveOpenAPI(t)
	for _, path := range []string{openAPIV2Path, openAPIV3Path, v3DocPath} {
		resp, _ := fetchOK(t, ts, path, "Accept", "application/json")
		etag := resp.Header.Get("Etag")
		resp, body := fetch(t, ts, http.MethodGet, path, "Accept", "application/json", "If-None-Match", etag)
		if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
			t.Errorf("%s with If-None-Match its ETag: %d, %d bytes", path, resp.StatusCode, len(body))
		}
		resp, _ = fetch(t, ts, http.MethodGet, path, "Accept", "application/json", "If-None-Match", `"0THER"`)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s with If-None-Match another ETag: %d", path, resp.StatusCode)
		}
	}
}

func TestOpenAPIUnknownPathsAndMethods(t *testing.T) {
	ts := serveOpenAPI(t)
	for _, path := range []string{
		"/openapi", "/openapi/", "/openapi/v1", "/openapi/v2/", "/openapi/v3/", "/openapi/v3/apis",
		"/openapi/v3/apis/metadata.catalogd.operatorframework.io", "/openapi/v3/apis/apps/v1",
		v3DocPath + "/", v3DocPath + "/catalogmetadata",
	} {
		if resp, _ := fetch(t, ts, http.MethodGet, path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
	if resp, _ := fetch(t, ts, http.MethodPost, openAPIV2Path); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %d, want 405", openAPIV2Path, resp.StatusCode)
	}
	if resp, body := fetch(t, ts, http.MethodHead, v3DocPath); resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Errorf("HEAD %s: %d, %d bytes", v3DocPath, resp.StatusCode, len(body))
	}
}

func TestOpenAPIProtobuf(t *testing.T) {
	ts := serveOpenAPI(t)
	for _, tc := range []struct {
		path, accept, contentType string
		into                      proto.Message
	}{
		{openAPIV2Path, "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", "application/" + protoV2, &openapi_v2.Document{}},
		{openAPIV2Path, "application/" + protoV2 + ", application/json;q=0.5", "application/" + protoV2, &openapi_v2.Document{}},
		{v3DocPath, "application/com.github.proto-openapi.spec.v3@v1.0+protobuf", "application/" + protoV3, &openapi_v3.Document{}},
		{v3DocPath, "application/" + protoV3, "application/" + protoV3, &openapi_v3.Document{}},
	} {
		resp, body := fetchOK(t, ts, tc.path, "Accept", tc.accept)
		if ct := resp.Header.Get("Content-Type"); ct != tc.contentType {
			t.Errorf("%s as %s: Content-Type %q", tc.path, tc.accept, ct)
		}
		if err := proto.Unmarshal(body, tc.into); err != nil {
			t.Errorf("%s as %s: %v", tc.path, tc.accept, err)
		}
	}
	if resp, _ := fetch(t, ts, http.MethodGet, v3DocPath, "Accept", "text/html"); resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("%s as text/html: %d, want 406", v3DocPath, resp.StatusCode)
	}
}

// TestOpenAPIV2KubectlFindsTheKind reads the v2 document as kubectl does (gnostic, then the proto
// models kubectl explain --output=plaintext-openapiv2 and validation use).
func TestOpenAPIV2KubectlFindsTheKind(t *testing.T) {
	ts := serveOpenAPI(t)
	_, body := fetchOK(t, ts, openAPIV2Path, "Accept", "application/json")
	doc, err := openapi_v2.ParseDocument(body)
	if err != nil {
		t.Fatal(err)
	}
	models, err := openapiproto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatal(err)
	}
	kind, ok := models.LookupModel(catalogMetadataName).(*openapiproto.Kind)
	if !ok || kind.Fields["spec"] == nil || kind.Fields["metadata"] == nil {
		t.Fatalf("model %s: %v", catalogMetadataName, models.LookupModel(catalogMetadataName))
	}
	resources, err := kubectlopenapi.NewOpenAPIData(doc)
	if err != nil {
		t.Fatal(err)
	}
	if s := resources.LookupResource(catalogMetadataGVK); s == nil || s.GetPath().String() != catalogMetadataName {
		t.Errorf("kubectl finds no schema for %s: %v", catalogMetadataGVK, s)
	}
}

// TestOpenAPIV3KubectlExplain runs kubectl explain (its default, OpenAPI v3 output) against the
// served index and document, as it runs through kube-apiserver's proxy.
func TestOpenAPIV3KubectlExplain(t *testing.T) {
	ts := serveOpenAPI(t)
	client, err := discovery.NewDiscoveryClientForConfig(&restclient.Config{Host: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	gvr := metadatav1alpha1.SchemeGroupVersion.WithResource("catalogmetadata")
	if err := explainv2.PrintModelDescription([]string{"spec"}, &out, client.OpenAPIV3(), gvr, false, 0, "plaintext"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"KIND:       CatalogMetadata", "FIELD: spec <CatalogMetadataSpec>", "catalog\t<string> -required-", "Catalog is the name of the Catalog"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("kubectl explain catalogmetadata.spec does not say %q:\n%s", want, out.String())
		}
	}
}

func TestOpenAPIDefinitionNames(t *testing.T) {
	for key, want := range map[string]string{
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta":                       "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
		"k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta":                       "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
		"github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1.CatalogMetadata": "com.github.olmv1.olmv1.catalogd.api.metadata.v1alpha1.CatalogMetadata",
		catalogMetadataName: catalogMetadataName,
	} {
		if got := definitionName(key); got != want {
			t.Errorf("definitionName(%q) = %q, want %q", key, got, want)
		}
	}
}
