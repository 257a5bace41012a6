package metadataapi

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
)

// minWatchTimeout is how long a watch without timeoutSeconds lasts at least; it lasts up to twice
// that (a random share, so that clients do not all reconnect at once), as kube-apiserver's
// --min-request-timeout default.
const minWatchTimeout = 30 * time.Minute

// serveWatch streams the watch opts asks for as JSON watch events ({"type":…,"object":…}, one per
// line), the objects in form f, until the client goes away, the watch ends (the client fell too far
// behind) or its timeout passes.
func (h *handler) serveWatch(w http.ResponseWriter, r *http.Request, f form, opts *metainternalversion.ListOptions) {
	if f.yaml || f.as == "PartialObjectMetadataList" {
		writeError(w, r, notAcceptableError("a watch is served as application/json, optionally as=Table or as=PartialObjectMetadata of meta.k8s.io"))
		return
	}
	wi, err := h.rest.Watch(r.Context(), opts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer wi.Stop()
	timeout := minWatchTimeout + rand.N(minWatchTimeout) //nolint:gosec // spreading reconnects, not a secret
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()

	flusher, _ := w.(http.Flusher)
	startAnswer(w, r, http.StatusOK, f.contentType(), 0) // never compressed: events are flushed one by one
	if flusher != nil {
		flusher.Flush()
	}
	includeObject := r.URL.Query().Get("includeObject")
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-r.Context().Done():
			return
		case <-timer.C:
			return
		case ev, ok = <-wi.ResultChan():
		}
		if !ok {
			return
		}
		if _, err := w.Write(watchEvent(f, ev, includeObject)); err != nil {
			return
		}
		// Flush once nothing else is ready: the initial events of a large watch go out in a few writes.
		if flusher != nil && len(wi.ResultChan()) == 0 {
			flusher.Flush()
		}
	}
}

// watchEvent is ev on the wire, its object in form f: {"type":…,"object":…} and a newline.
func watchEvent(f form, ev watch.Event, includeObject string) []byte {
	obj, _ := ev.Object.(*metadatav1alpha1.CatalogMetadata)
	var v any = ev.Object
	asObject := false
	switch {
	case obj == nil:
	case f.as == "":
		asObject = true
	case f.as == "PartialObjectMetadata":
		v = partial(obj, f.asVersion)
	case ev.Type == watch.Bookmark:
		// A bookmark's Table has no rows, only the state's resourceVersion.
		v = &metav1.Table{
			TypeMeta: metav1.TypeMeta{APIVersion: metav1.GroupName + "/" + f.asVersion, Kind: "Table"},
			ListMeta: metav1.ListMeta{ResourceVersion: obj.ResourceVersion}, ColumnDefinitions: tableColumns,
		}
	default:
		if t, err := tableOf(obj, f.asVersion, includeObject); err == nil {
			v = t
		}
	}
	var raw []byte
	var err error
	if asObject {
		raw, err = marshalObject(obj)
	} else {
		raw, err = json.Marshal(v)
	}
	typ := ev.Type
	if err != nil {
		raw, _ = json.Marshal(apierrors.NewInternalError(err).Status())
		typ = watch.Error
	}
	line := make([]byte, 0, len(raw)+32)
	line = append(line, `{"type":`...)
	line = strconv.AppendQuote(line, string(typ))
	line = append(line, `,"object":`...)
	line = append(line, raw...)
	return append(line, '}', '\n')
}
