// Package platform is the home of the code every OLM v1 controller runs on and that is about none
// of their APIs. Its packages, by concern:
//
//   - boot: a controller's main: flags, logging, the manager, metrics with delegated authorization,
//     health and readiness, TLS profiles and serving certificates.
//   - pki: keys and certificates (CAs, serving certificates, renewal).
//   - delegatedauth: delegated authentication and authorization (TokenReview, SubjectAccessReview)
//     for the servers of the controllers.
//   - step: the errors a reconcile step returns (which condition, which reason, terminal or not) and
//     the controller result they give.
//   - conditionevents: the events policy and the one recorder API (events.k8s.io/v1): one Event per
//     condition transition, Warning while failing, and one-off Normal/Warning Events; no other code
//     calls a recorder (TestNoEventCallsOutsideThePolicy).
//   - paused: the Paused condition of every kind with spec.paused (SetCondition: one way to report it).
//   - objmeta: the finalizer and owned labels a controller keeps on what it reconciles (Ensure,
//     RemoveFinalizer).
//   - statuspatch: the one status write of a reconcile (IfChanged: a merge patch, only on a change).
//   - yamlalias: the YAML alias-bomb guard of catalogs and bundles.
//   - sharedtestdata: where the shared real test data is (../shared/testdata, $OLMV1_TESTDATA).
//   - apiservertest: the integration-test harness of every module: a real kube-apiserver and etcd
//     (envtest), CRDs installed, and CRD validation cases.
package platform
