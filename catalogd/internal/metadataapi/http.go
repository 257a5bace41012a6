package metadataapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
)

// request is what a request asks for, as the authorizer sees it: a verb on the catalogmetadata
// resource (a resource request) or on a path (discovery, OpenAPI, health).
type request struct {
	Verb     string
	Resource bool
	// Name is the object of a get, or of a watch of one object (/watch/catalogmetadata/<name>).
	Name string
	Path string
}

// authorizeFunc decides whether a request may go on; when it may not, it has answered it (401, 403
// or 503). nil lets every request through (tests serving the handler without kube-apiserver).
type authorizeFunc func(w http.ResponseWriter, r *http.Request, req request) bool

// handler is the whole API: discovery (/apis, the group, the group version), get, list and watch of
// catalogmetadata, the OpenAPI documents and the health endpoints. It is a plain net/http handler
// over REST; it does not use k8s.io/apiserver (whose generic API server made catalogd's binary and
// memory half again as large: docs/catalogmetadata.md).
type handler struct {
	rest      *REST
	scheme    *runtime.Scheme
	openapi   http.Handler
	authorize authorizeFunc
	// inFlight holds a token for each get or list being served (watches do not count).
	inFlight chan struct{}
}

// maxInFlight is how many gets and lists are served at once; more are 429 Too Many Requests with
// Retry-After, which client-go retries, as kube-apiserver's --max-requests-inflight does. A list of a
// large package holds its blobs while it is written, so this bounds the memory of a burst.
const maxInFlight = 64

var (
	groupPath    = "/apis/" + metadatav1alpha1.GroupName
	versionPath  = groupPath + "/" + metadatav1alpha1.SchemeGroupVersion.Version
	resourceName = "catalogmetadata"
)

// healthPaths are answered to anyone, as kube-apiserver's delegated authorization always allows
// them.
var healthPaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler { //nolint:errorlint // the sentinel value net/http panics with
				panic(p)
			}
			writeError(w, r, apierrors.NewInternalError(fmt.Errorf("panic serving %s: %v", r.URL.Path, p)))
		}
	}()
	req, serve := h.route(r)
	observe(w, r, req, func(w http.ResponseWriter, r *http.Request) {
		if h.authorize != nil && !healthPaths[r.URL.Path] && !h.authorize(w, r, req) {
			return
		}
		if req.Resource && req.Verb != "watch" {
			select {
			case h.inFlight <- struct{}{}:
				defer func() { <-h.inFlight }()
			default:
				writeError(w, r, apierrors.NewTooManyRequests(
					fmt.Sprintf("catalogd is serving %d requests of the CatalogMetadata API already; retry", cap(h.inFlight)), 1))
				return
			}
		}
		serve(w, r)
	})
}

// route maps a request to what it asks for and the function that answers it.
func (h *handler) route(r *http.Request) (request, http.HandlerFunc) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	nonResource := request{Verb: strings.ToLower(r.Method), Path: r.URL.Path}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return nonResource, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, r, apierrors.NewMethodNotSupported(Resource(resourceName), strings.ToLower(r.Method)))
		}
	}
	switch {
	case healthPaths[path]:
		return nonResource, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("ok"))
		}
	case path == "/apis" || path == groupPath || path == versionPath:
		return nonResource, h.discovery(path)
	case strings.HasPrefix(path, "/openapi/") && h.openapi != nil:
		return nonResource, h.openapi.ServeHTTP
	}
	rest, ok := strings.CutPrefix(path, versionPath+"/")
	if !ok {
		return nonResource, notFound
	}
	watchPath := false
	if after, ok := strings.CutPrefix(rest, "watch/"); ok {
		rest, watchPath = after, true
	}
	resource, name, named := strings.Cut(rest, "/")
	if resource != resourceName || strings.Contains(name, "/") || (named && name == "") {
		return nonResource, notFound
	}
	switch {
	case watchPath:
		return request{Verb: "watch", Resource: true, Name: name, Path: r.URL.Path}, h.serveList(name, true)
	case named:
		return request{Verb: "get", Resource: true, Name: name, Path: r.URL.Path}, h.serveGet(name)
	case isWatch(r.URL.Query()):
		return request{Verb: "watch", Resource: true, Path: r.URL.Path}, h.serveList("", true)
	}
	return request{Verb: "list", Resource: true, Path: r.URL.Path}, h.serveList("", false)
}

func isWatch(q url.Values) bool {
	v := q.Get("watch")
	return v == "true" || v == "1"
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, apierrors.NewGenericServerResponse(http.StatusNotFound, "get", schema.GroupResource{}, "",
		fmt.Sprintf("the server could not find the requested resource (this API serves %s/%s)", versionPath, resourceName), 0, false))
}

// serveGet answers GET .../catalogmetadata/<name>.
func (h *handler) serveGet(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f, ok := negotiate(r.Header.Get("Accept"))
		if !ok {
			writeError(w, r, notAcceptable(r.Header.Get("Accept")))
			return
		}
		var opts metav1.GetOptions
		if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
			writeError(w, r, apierrors.NewBadRequest(err.Error()))
			return
		}
		obj, err := h.rest.Get(r.Context(), name, &opts)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeObject(w, r, f, obj)
	}
}

// serveList answers a list or a watch of the collection; name (a /watch/catalogmetadata/<name>
// path) watches one object.
func (h *handler) serveList(name string, watching bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f, ok := negotiate(r.Header.Get("Accept"))
		if !ok {
			writeError(w, r, notAcceptable(r.Header.Get("Accept")))
			return
		}
		opts, err := h.listOptions(r.URL.Query(), name, watching)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if watching {
			h.serveWatch(w, r, f, opts)
			return
		}
		list := h.rest.List
		if !f.needsContent(r.URL.Query().Get("includeObject")) {
			list = h.rest.ListWithoutContent
		}
		obj, err := list(r.Context(), opts)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeObject(w, r, f, obj)
	}
}

// listOptions decodes and checks the query parameters of a list or watch: integers, selectors
// (field selectors converted with the scheme's field labels), and the combinations kube-apiserver
// forbids.
func (h *handler) listOptions(query url.Values, name string, watching bool) (*metainternalversion.ListOptions, error) {
	if err := checkIntegerParams(query); err != nil {
		return nil, err
	}
	opts := &metainternalversion.ListOptions{}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(query, metav1.SchemeGroupVersion, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	opts.Watch = watching
	if name != "" {
		byName := fields.OneTermEqualSelector("metadata.name", name)
		if opts.FieldSelector == nil || opts.FieldSelector.Empty() {
			opts.FieldSelector = byName
		} else {
			opts.FieldSelector = fields.AndSelectors(opts.FieldSelector, byName)
		}
	}
	if opts.FieldSelector != nil {
		kind := metadatav1alpha1.SchemeGroupVersion.WithKind("CatalogMetadata")
		sel, err := opts.FieldSelector.Transform(func(label, value string) (string, string, error) {
			return h.scheme.ConvertFieldLabel(kind, label, value)
		})
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		opts.FieldSelector = sel
	}
	if errs := validation.ValidateListOptions(opts, true); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return opts, nil
}

// discovery answers /apis, the group and the group version (the legacy discovery documents, which
// kube-apiserver's aggregator reads and merges into its own).
func (h *handler) discovery(path string) http.HandlerFunc {
	gv := metav1.GroupVersionForDiscovery{GroupVersion: metadatav1alpha1.SchemeGroupVersion.String(), Version: metadatav1alpha1.SchemeGroupVersion.Version}
	group := metav1.APIGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "APIGroup"},
		Name:     metadatav1alpha1.GroupName, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv,
	}
	var doc any
	switch path {
	case "/apis":
		group.TypeMeta = metav1.TypeMeta{}
		doc = &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "APIGroupList"}, Groups: []metav1.APIGroup{group}}
	case groupPath:
		doc = &group
	default:
		doc = &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{APIVersion: "v1", Kind: "APIResourceList"},
			GroupVersion: metadatav1alpha1.SchemeGroupVersion.String(),
			APIResources: []metav1.APIResource{{
				Name: resourceName, SingularName: resourceName, Namespaced: false, Kind: "CatalogMetadata",
				Verbs: metav1.Verbs{"get", "list", "watch"},
			}},
		}
	}
	return func(w http.ResponseWriter, r *http.Request) {
		f := form{yaml: strings.Contains(r.Header.Get("Accept"), "application/yaml") && !strings.Contains(r.Header.Get("Accept"), "application/json")}
		body, err := f.marshal(doc)
		if err != nil {
			writeError(w, r, apierrors.NewInternalError(err))
			return
		}
		writeAnswer(w, r, http.StatusOK, f.contentType(), body)
	}
}

// newHandler serves rest; openapi and authorize may be nil.
func newHandler(rest *REST, scheme *runtime.Scheme, openapi http.Handler, authorize authorizeFunc) *handler {
	return &handler{rest: rest, scheme: scheme, openapi: openapi, authorize: authorize, inFlight: make(chan struct{}, maxInFlight)}
}
