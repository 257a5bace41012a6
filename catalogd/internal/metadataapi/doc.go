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
//     from apimachinery's parameter decoding and the scheme's field label conversion.
//
// Where things are: the Hub (hub.go) holds the current state, each catalog's content pinned open,
// and follows the store (Notify, Sync, Follow in store_reader.go); watchers are in watch.go; REST
// (rest.go) answers get, list and watch. The API server is plain net/http, without
// k8s.io/apiserver (whose generic server cost catalogd about 20 MB of heap and 25 MB of binary):
// http.go routes and decodes requests, encode.go and stream.go write answers (JSON, YAML, kubectl
// Tables, metadata only, watch streams), openapi.go serves the OpenAPI documents, guard.go
// delegates authentication and authorization to kube-apiserver (rukpak/pkg/delegate),
// servingcert.go and server.go serve TLS, and register.go and manager.go register the APIService.
// handler_test.go and http_test.go send requests through the real request handling.
package metadataapi
