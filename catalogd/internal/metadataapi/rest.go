package metadataapi

import (
	"context"
	"errors"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
)

// REST answers get, list and watch of catalogmetadata (http.go decodes the requests and encodes
// the answers) and converts objects to kubectl tables (table.go).
type REST struct {
	hub *Hub
}

// NewREST serves the hub's catalogs.
func NewREST(hub *Hub) *REST { return &REST{hub: hub} }

// Get answers a get of one object. It always serves the current state; a resourceVersion catalogd
// cannot have issued is 400 Bad Request, as for list and watch.
func (r *REST) Get(_ context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	if opts != nil {
		if _, err := parseVersion(opts.ResourceVersion); err != nil {
			return nil, err
		}
	}
	e, pin, ok := r.hub.lookup(name)
	if !ok {
		return nil, apierrors.NewNotFound(Resource("catalogmetadata"), name)
	}
	defer pin.release()
	var found *metadatav1alpha1.CatalogMetadata
	err := pin.snap.Blobs(Filter{Schema: e.schema, Package: e.pkg, Name: e.name}, func(b Blob) error {
		if found == nil && ObjectName(e.catalog, b.Schema, b.Package, b.Name) == name {
			found = newObject(e, b.Content)
			found.Annotations = map[string]string{metadatav1alpha1.AnnotationContentHash: pin.snap.Hash()}
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

// errStop ends a store scan early once a page is full.
var errStop = errors.New("page full")

// List answers a list: selectors narrow the store query where they name exact values, and
// limit/continue page through catalogs in name order and blobs in store order. Every page of a list
// answers the first page's resourceVersion; a page is served only from the same content as the
// first one had (on any replica), otherwise it is 410 Gone. The steps: listStart (check the
// continue token or resourceVersion) → view (pin the current state) → continueView (check that a
// continued list still sees the content of its first page) → fillPage.
func (r *REST) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	return r.list(ctx, opts, true)
}

// ListWithoutContent is List with the objects' spec.content left empty: the blobs are not read, for
// answers that show only metadata (kubectl tables, PartialObjectMetadataList).
func (r *REST) ListWithoutContent(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	return r.list(ctx, opts, false)
}

func (r *REST) list(_ context.Context, opts *metainternalversion.ListOptions, content bool) (runtime.Object, error) {
	if opts == nil {
		opts = &metainternalversion.ListOptions{}
	}
	sel := newSelection(opts.LabelSelector, opts.FieldSelector)
	sel.filter.NoContent = !content
	cont, err := r.listStart(opts, sel)
	if err != nil {
		return nil, err
	}
	v := r.hub.view(sel.catalog)
	defer func() { v.release() }()
	list := &metadatav1alpha1.CatalogMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: v.rv}}
	if cont != nil {
		if v, err = r.continueView(v, cont, sel.catalog); err != nil {
			return nil, err
		}
		list.ResourceVersion = cont.RV
	}
	if err := fillPage(list, v, sel, cont, opts.Limit); err != nil {
		return nil, err
	}
	return list, nil
}

// listStart checks where a list starts: the continue token, issued for the same selectors, of a
// later page, or else a resourceVersion this replica can list at (checkListVersion).
func (r *REST) listStart(opts *metainternalversion.ListOptions, sel selection) (*continueToken, error) {
	if opts.Continue == "" {
		return nil, r.checkListVersion(opts.ResourceVersion, opts.ResourceVersionMatch)
	}
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		return nil, apierrors.NewBadRequest("specifying resourceVersion is not allowed when using continue")
	}
	cont, err := decodeContinue(opts.Continue)
	if err != nil {
		return nil, err
	}
	if cont.Selector != selectorDigest(sel.labels, sel.fields) {
		return nil, apierrors.NewBadRequest("invalid continue token: it was issued for other label or field selectors; continue a list with the selectors of its first page")
	}
	return cont, nil
}

// continueView checks that v serves the content cont's first page saw for cont's catalog and every
// later one. When it does not, this replica may be behind the one that issued the token: it catches
// up and pins the state again. It returns the view to list from (to release), with 410 Gone when the
// content still differs.
func (r *REST) continueView(v *view, cont *continueToken, only string) (*view, error) {
	if v.restVersion(cont.Catalog) == cont.Rest {
		return v, nil
	}
	_ = r.hub.Sync()
	v.release()
	v = r.hub.view(only)
	if v.restVersion(cont.Catalog) != cont.Rest {
		return v, apierrors.NewResourceExpired(fmt.Sprintf(
			"the content of catalog %s or of a later catalog this list covers changed since the list began (or this replica serves other content): list again without continue", quoteShort(cont.Catalog)))
	}
	return v, nil
}

// fillPage appends to list the matching objects of v's catalogs, from where cont left off (nil:
// from the first), until list holds limit items (0: no limit); then list.Continue says where the
// next page starts.
func fillPage(list *metadatav1alpha1.CatalogMetadataList, v *view, sel selection, cont *continueToken, limit int64) error {
	catalogs := v.catalogs
	if cont != nil {
		catalogs = v.catalogs[sort.SearchStrings(v.catalogs, cont.Catalog):]
	}
	for _, c := range catalogs {
		skip := 0
		if c == cont.catalog() {
			skip = cont.Offset
		}
		err := fillFromCatalog(list, v, c, sel, skip, limit)
		if errors.Is(err, errStop) {
			return nil
		}
		if err != nil {
			return apierrors.NewInternalError(err)
		}
	}
	return nil
}

// fillFromCatalog appends the objects of catalog c that match sel, but for the first skip, to list.
// Once list holds limit items and another object matches, it sets list.Continue and returns errStop.
func fillFromCatalog(list *metadatav1alpha1.CatalogMetadataList, v *view, c string, sel selection, skip int, limit int64) error {
	state := v.states[c]
	matched := 0
	// One map for every object of the catalog: list items are only encoded (DeepCopy copies it).
	annotations := map[string]string{metadatav1alpha1.AnnotationContentHash: state.hash}
	return state.pin.snap.Blobs(sel.filter, func(b Blob) error {
		e := state.objects[ObjectName(c, b.Schema, b.Package, b.Name)]
		if e == nil {
			e = newEntry(c, b)
		}
		obj := newObject(e, b.Content)
		if !sel.matches(obj) {
			return nil
		}
		matched++
		if matched <= skip {
			return nil
		}
		if limit > 0 && int64(len(list.Items)) == limit {
			list.Continue = continueToken{
				Version: continueVersion, RV: list.ResourceVersion, Catalog: c, Offset: matched - 1,
				Rest: v.restVersion(c), Selector: selectorDigest(sel.labels, sel.fields),
			}.encode()
			return errStop
		}
		obj.Annotations = annotations
		list.Items = append(list.Items, *obj)
		return nil
	})
}

func (t *continueToken) catalog() string {
	if t == nil {
		return ""
	}
	return t.Catalog
}

// checkListVersion answers whether a list may be served with resourceVersion rv: any state will do
// for "" and "0"; otherwise rv must be the current state or one this replica retains (the current one
// is not older), and the current one for match Exact. Lists are always served from the current state.
func (r *REST) checkListVersion(rv string, match metav1.ResourceVersionMatch) error {
	kind, err := parseVersion(rv)
	if err != nil || kind == versionAny {
		return err
	}
	if kind == versionLegacy {
		return goneError(rv, kind, historyTransitions)
	}
	if !r.hub.knows(rv) {
		_ = r.hub.Sync()
		if !r.hub.knows(rv) {
			return goneError(rv, kind, historyTransitions)
		}
	}
	if match == metav1.ResourceVersionMatchExact && rv != r.hub.ResourceVersion() {
		return apierrors.NewResourceExpired(fmt.Sprintf(
			"resourceVersion %q is not the current state: catalogd serves lists only at the current state; list with resourceVersionMatch NotOlderThan or without resourceVersion", rv))
	}
	return nil
}

// Watch opens a watch:
//
//   - Without a resourceVersion (or "0") it first sends every matching object as ADDED (unless
//     sendInitialEvents is false), then later changes.
//   - From the resourceVersion of a list or bookmark of any replica, it sends the changes since that
//     state, if this replica serves or retains it; otherwise it is 410 Gone and the client lists again.
//   - With sendInitialEvents (watch-list), it sends the current objects as ADDED and then a bookmark
//     marked as the end of the initial events.
//   - With allowWatchBookmarks, a bookmark follows every change of the served content.
func (r *REST) Watch(_ context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	if opts == nil {
		opts = &metainternalversion.ListOptions{}
	}
	sel := newSelection(opts.LabelSelector, opts.FieldSelector)
	kind, err := parseVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if kind == versionLegacy {
		return nil, goneError(opts.ResourceVersion, kind, historyTransitions)
	}
	from := ""
	if kind == versionDigest {
		from = opts.ResourceVersion
	}
	initial := kind == versionAny
	if opts.SendInitialEvents != nil {
		initial = *opts.SendInitialEvents
	}
	w, err := r.hub.startWatch(sel, from, initial, opts.AllowWatchBookmarks)
	if errors.Is(err, errNotRetained) {
		// This replica may be behind the one that issued the resourceVersion: catch up, then decide.
		_ = r.hub.Sync()
		w, err = r.hub.startWatch(sel, from, initial, opts.AllowWatchBookmarks)
	}
	if errors.Is(err, errNotRetained) {
		return nil, goneError(opts.ResourceVersion, kind, historyTransitions)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return w, nil
}
