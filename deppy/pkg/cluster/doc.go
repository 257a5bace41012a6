// Package cluster is what operator-controller reads from a cluster to resolve, and how it turns that
// into the inputs of its resolution core (package operators). operator-controller and `deppy resolve
// --kubeconfig` both run this code, so both decide the same bundles from the same cluster state.
//
// The contract, from the objects to a decision per Operator:
//
//   - Catalogs (catalogd.operatorframework.io/v1alpha1): a Catalog is serving when it has a
//     status.contentHash and its Serving condition is True. Only serving Catalogs are read, and
//     only they can be selected by an Operator's spec.catalogSelector. spec.priority ranks them.
//   - Catalog content is read from the CatalogMetadata aggregated API
//     (metadata.catalogd.operatorframework.io/v1alpha1, field selector spec.catalog=<name>,
//     paginated) by a ContentReader. The Cache parses and indexes it per (name, content hash) and
//     first checks that what was read is the content the status names (status.counts, and
//     status.contentHash when the caller supplies catalogd's hash function): a catalogd replica that
//     has not loaded a catalog yet answers an empty or older list without an error.
//   - IndexFor reads only what resolving some packages needs, through a PartReader (field selectors
//     spec.package, spec.schema): those packages and, transitively, the packages their bundles depend
//     on (parts.go, closure.go). Each blob read must carry the catalog's status.contentHash in its
//     catalogd.operatorframework.io/content-hash annotation. operator-controller resolves this way;
//     `deppy resolve --kubeconfig` reads whole catalogs.
//   - Operators (operators.operatorframework.io/v1alpha1) become operators.Requests (Requests);
//     an Operator being deleted is not resolved, and one whose spec.catalogSelector is not a valid
//     selector fails alone.
//   - The bundle an Operator's BundleDeployment (core.rukpak.io/v1alpha1, created by
//     operator-controller: label operators.operatorframework.io/owner-kind=Operator, controlled by
//     the Operator) names in its annotations operators.operatorframework.io/{package,bundle-name,
//     bundle-version} is what the Operator has installed.
//
// Objects are described by small local structs (Catalog, Operator, BundleDeployment): this module
// does not import the API modules of catalogd, rukpak or operator-controller. operator-controller
// converts its typed objects into them; `deppy resolve --kubeconfig` decodes them from the dynamic
// client's unstructured objects (ReadState).
package cluster
