// Package replica makes every catalogd replica serve every Catalog from its own store.
//
// Each replica has its own store (an emptyDir in the chart) and serves the content endpoint and the
// CatalogMetadata API from it, so a Service may route a request to any of them. The contract:
//
//   - The leader's Catalog reconciler (catalogd/internal/controller) unpacks spec.source, stores the
//     content and writes status. It is the only writer of status: status.resolvedSource (image
//     digest, git commit, HTTP ETag, ConfigMap resourceVersions) and status.contentHash name exactly
//     the content a replica must serve.
//   - Every replica runs a Syncer (not leader-elected). On a replica that is not the leader it
//     watches Catalogs through the manager cache and, for each Catalog whose status names content
//     its store does not hold, unpacks exactly that resolved source (PinnedSource) and stores it only
//     if its hash is status.contentHash; it removes the content of Catalogs that are deleted. On the
//     leader it writes nothing: the reconciler owns that store. A paused Catalog (spec.paused)
//     changes nothing here: a pause stops the leader's unpacking of the spec, not the loading of
//     what the status names, which stays served everywhere (the paused leader loads it the same way).
//   - Content enters or leaves a store only through a Loader (fetch → parse and validate → store, or
//     remove), which both use; a per-catalog lock and a guard evaluated under it ("this replica is
//     not the leader") make sure that a Syncer finishing a load just as its replica is elected never
//     overwrites what the new leader's reconciler stored.
//   - Readiness (Syncer.ReadyCheck, the "catalogs" readyz check): a replica that is not the leader is
//     Ready only when, for every Catalog with Serving=True, its store serves the status's content
//     hash; otherwise the check fails naming the catalogs still loading and why. The leader's status
//     is written from its own store, so the leader only has to hold content for every serving
//     Catalog (it is not Ready after a restart on an empty store until its reconciler has unpacked
//     them).
package replica
