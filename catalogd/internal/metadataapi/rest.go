package metadataapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
	"sort"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/rest"
)

// REST is the read-only storage of catalogmetadata: Get, List, Watch and a kubectl table.
type REST struct {
	hub *Hub
}

var (
	_ rest.Storage              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.Getter               = &REST{}
	_ rest.Lister               = &REST{}
	_ rest.Watcher              = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// NewREST serves the hub's catalogs.
func NewREST(hub *Hub) *REST { return &REST{hub: hub} }

// New implements rest.Storage.
func (r *REST) New() runtime.Object { return &metadatav1alpha1.CatalogMetadata{} }

// Destroy implements rest.Storage.
func (r *REST) Destroy() {}

// NamespaceScoped implements rest.Scoper: catalog metadata is cluster-scoped.
func (r *REST) NamespaceScoped() bool { return false }

// GetSingularName implements rest.SingularNameProvider.
func (r *REST) GetSingularName() string { return "catalogmetadata" }

// NewList implements rest.Lister.
func (r *REST) NewList() runtime.Object { return &metadatav1alpha1.CatalogMetadataList{} }

// Get implements rest.Getter.
func (r *REST) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	e, ok := r.hub.lookup(name)
	if !ok {
		return nil, apierrors.NewNotFound(Resource("catalogmetadata"), name)
	}
	var found *metadatav1alpha1.CatalogMetadata
	err := r.hub.reader.Blobs(e.catalog, Filter{Schema: e.schema, Package: e.pkg, Name: e.name}, func(b Blob) error {
		if ObjectName(e.catalog, b.Schema, b.Package, b.Name) == name && found == nil {
			found = newObject(name, e, b.Content)
		}
		return nil
	})
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if found == nil {
		return nil, apierrors.NewNotFound(Resource("catalogmetadata"), name)
	}
	return found, nil
}

// selection is a parsed label and field selector with the exact values that narrow the store query.
type selection struct {
	labels  labels.Selector
	fields  fields.Selector
	catalog string
	filter  Filter
}

func newSelection(label labels.Selector, field fields.Selector) selection {
	s := selection{labels: labels.Everything(), fields: fields.Everything()}
	if label != nil {
		s.labels = label
	}
	if field != nil {
		s.fields = field
	}
	exact := func(field, labelName string) string {
		if v, ok := s.fields.RequiresExactMatch(field); ok {
			return v
		}
		v, _ := s.labels.RequiresExactMatch(labelName)
		return v
	}
	s.catalog = exact(metadatav1alpha1.FieldCatalog, "catalog")
	s.filter = Filter{Schema: exact(metadatav1alpha1.FieldSchema, "schema"), Package: exact(metadatav1alpha1.FieldPackage, "package"), Name: exact(metadatav1alpha1.FieldName, "name")}
	return s
}

func (s selection) matches(obj *metadatav1alpha1.CatalogMetadata) bool {
	return s.labels.Matches(labels.Set(obj.Labels)) && s.fields.Matches(fields.Set{
		"metadata.name":               obj.Name,
		metadatav1alpha1.FieldCatalog: obj.Spec.Catalog,
		metadatav1alpha1.FieldSchema:  obj.Spec.Schema,
		metadatav1alpha1.FieldPackage: obj.Spec.Package,
		metadatav1alpha1.FieldName:    obj.Spec.Name,
	})
}

// continueToken marks where a paginated list stopped: in which catalog, after how many matching blobs,
// and at which version of that catalog.
type continueToken struct {
	Catalog   string `json:"c"`
	Offset    int    `json:"o"`
	CatalogRV uint64 `json:"v"`
}

func decodeContinue(s string) (*continueToken, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, apierrors.NewBadRequest("invalid continue token")
	}
	t := &continueToken{}
	if err := json.Unmarshal(raw, t); err != nil {
		return nil, apierrors.NewBadRequest("invalid continue token")
	}
	return t, nil
}

func (t continueToken) encode() string {
	raw, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// errStop ends a store scan early once a page is full.
var errStop = fmt.Errorf("page full")

// List implements rest.Lister: selectors narrow the store query where they name exact values, and
// limit/continue page through catalogs in name order and blobs in store order.
func (r *REST) List(_ context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	var sel selection
	var limit int64
	var cont *continueToken
	if opts != nil {
		sel = newSelection(opts.LabelSelector, opts.FieldSelector)
		limit = opts.Limit
		if opts.Continue != "" {
			var err error
			if cont, err = decodeContinue(opts.Continue); err != nil {
				return nil, err
			}
		}
	} else {
		sel = newSelection(nil, nil)
	}
	catalogs := r.hub.reader.Catalogs()
	sort.Strings(catalogs)
	if sel.catalog != "" {
		catalogs = filterCatalogs(catalogs, sel.catalog)
	}
	list := &metadatav1alpha1.CatalogMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(r.hub.ResourceVersion(), 10)}}
	for _, c := range catalogs {
		skip := 0
		if cont != nil {
			if c < cont.Catalog {
				continue
			}
			if c == cont.Catalog {
				if r.hub.catalogRV(c) != cont.CatalogRV {
					return nil, apierrors.NewResourceExpired(fmt.Sprintf("catalog %q changed since this list began; list again without continue", c))
				}
				skip = cont.Offset
			}
		}
		matched := 0
		err := r.hub.reader.Blobs(c, sel.filter, func(b Blob) error {
			name := ObjectName(c, b.Schema, b.Package, b.Name)
			e := &entry{catalog: c, schema: b.Schema, pkg: b.Package, name: b.Name, rv: r.hub.objectRV(name)}
			obj := newObject(name, e, b.Content)
			if !sel.matches(obj) {
				return nil
			}
			matched++
			if matched <= skip {
				return nil
			}
			if limit > 0 && int64(len(list.Items)) == limit {
				list.Continue = continueToken{Catalog: c, Offset: matched - 1, CatalogRV: r.hub.catalogRV(c)}.encode()
				return errStop
			}
			list.Items = append(list.Items, *obj)
			return nil
		})
		if err == errStop {
			return list, nil
		}
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	return list, nil
}

func filterCatalogs(all []string, want string) []string {
	for _, c := range all {
		if c == want {
			return []string{c}
		}
	}
	return nil
}

// Watch implements rest.Watcher. Without a resource version (or "0") it first sends every matching
// object as ADDED; with the version of a previous list it sends only later changes; an older version
// is expired (the client lists again).
func (r *REST) Watch(_ context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	sel := newSelection(nil, nil)
	rv := ""
	if opts != nil {
		sel = newSelection(opts.LabelSelector, opts.FieldSelector)
		rv = opts.ResourceVersion
	}
	h := r.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	var initial []*metadatav1alpha1.CatalogMetadata
	switch rv {
	case "", "0":
		// One store query per catalog (narrowed by the selector's exact values) gives every initial
		// object its content, instead of one query per object.
		byName := map[string]*metadatav1alpha1.CatalogMetadata{}
		for name, e := range h.byName {
			if obj := newObject(name, e, nil); sel.matches(obj) {
				byName[name] = obj
			}
		}
		for catalog := range h.catalogs {
			if sel.catalog != "" && catalog != sel.catalog {
				continue
			}
			if err := h.reader.Blobs(catalog, sel.filter, func(b Blob) error {
				if obj, ok := byName[ObjectName(catalog, b.Schema, b.Package, b.Name)]; ok {
					obj.Spec.Content = runtime.RawExtension{Raw: b.Content}
				}
				return nil
			}); err != nil {
				return nil, apierrors.NewInternalError(err)
			}
		}
		names := make([]string, 0, len(byName))
		for name := range byName {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			initial = append(initial, byName[name])
		}
	default:
		v, err := strconv.ParseUint(rv, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", rv))
		}
		if v < h.rv {
			return nil, apierrors.NewResourceExpired(fmt.Sprintf("resourceVersion %d is older than the current %d; list again", v, h.rv))
		}
	}
	return h.watch(sel.matches, initial), nil
}
