// Package metadataapi serves the CatalogMetadata aggregated API
// (metadata.catalogd.operatorframework.io/v1alpha1): read-only get, list and watch of every FBC blob
// of every catalog catalogd serves, read from catalogd's content store (no etcd).
//
// The contract (docs/catalogmetadata.md):
//
//   - resourceVersions and continue tokens are derived from the served content (versions.go), so
//     every replica serving the same content, and a catalogd restarted over the same store, gives the
//     same ones, and a client may continue a list or a watch on any of them;
//   - a list's pages are all served from the same content, whichever replica serves them, or the
//     page is 410 Gone;
//   - a watch from a state this process serves or retains (history.go) sends exactly the changes
//     since; from any other state it is 410 Gone, and the client lists again;
//   - a resourceVersion or continue token catalogd cannot have issued is 400 Bad Request (on get
//     too), and so is a limit or timeoutSeconds that is not an integer (params.go); malformed
//     label and field selectors, and field selectors on fields the API does not index, are 400
//     from k8s.io/apiserver's own parsing and the scheme's field label conversion.
//
// Where things are: the Hub (hub.go) holds the current state, each catalog's content pinned open,
// and follows the store (Notify, Sync, Follow in store_reader.go); watchers are in watch.go; REST
// (rest.go) implements the k8s.io/apiserver storage interfaces; server.go, register.go and
// manager.go run the API server and register its APIService. handler_test.go sends bad input
// through the real request handling.
package metadataapi
