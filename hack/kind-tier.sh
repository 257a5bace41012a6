#!/usr/bin/env bash
# The kind tier's steps, once bin/, the controllers' images and the caches are built (`make kind-e2e`
# and `make test-real-nodes` build them first): a kind cluster from the node image built here, the
# controllers' images loaded into it, the e2e specs of KIND_E2E_LABELS with the chart's pods really
# running, Tilt's kind-mode commands, the real-node specs of KIND_REAL_NODE_LABELS on kind's kubelet,
# and the cluster deleted whatever happened.
#
# Nothing here rebuilds bin/: the real-node tier may run beside it (hack/real-kubelet-tiers.sh) and
# executes those binaries.
#
# Environment (set by the Makefile): BIN_DIR, KIND_DEV, KIND_CLUSTER, KIND_IMAGES, REGISTRY,
# IMAGE_TAG, KIND_E2E_LABELS, KIND_REAL_NODE_LABELS, E2E_TIMEOUT.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
kubeconfig=$BIN_DIR/kind-kubeconfig

step() { echo "=== [kind] $* ($(date -u +%T))"; }

step "creating cluster $KIND_CLUSTER"
"$KIND_DEV" create --name "$KIND_CLUSTER" --kubeconfig "$kubeconfig" || exit 1
rc=0
step "loading the controllers' images"
# shellcheck disable=SC2086 # KIND_IMAGES is a list of paths
"$KIND_DEV" load --name "$KIND_CLUSTER" $KIND_IMAGES || rc=$?
if [ $rc = 0 ]; then
  step "the e2e specs $KIND_E2E_LABELS with the chart's pods and the installed operators' pods running"
  E2E_KIND_NODE=$KIND_CLUSTER-control-plane KUBECONFIG=$kubeconfig E2E_CHART_IMAGE_REGISTRY=$REGISTRY E2E_CHART_IMAGE_TAG=$IMAGE_TAG E2E_CHART_REAL_CLUSTER=1 \
    E2E_BIN_DIR=$BIN_DIR E2E_REPO_ROOT=$root E2E_LABELS=$KIND_E2E_LABELS E2E_TIMEOUT=$E2E_TIMEOUT \
    hack/test-tier.sh e2e e2e || rc=$?
fi
if [ $rc = 0 ]; then
  step "Tilt's kind mode: its commands run for real against the cluster"
  (cd e2e && OLMV1_KIND_KUBECONFIG=$kubeconfig go test -count=1 -v -run TestTiltfileKindModeAgainstKind ./tiltfile) || rc=$?
fi
if [ $rc = 0 ]; then
  step "the real-node specs ($KIND_REAL_NODE_LABELS) with kind's kubelet: OLM v1 from the chart and a real operator as pods"
  E2E_KIND_NODE=$KIND_CLUSTER-control-plane KUBECONFIG=$kubeconfig E2E_BIN_DIR=$BIN_DIR E2E_REPO_ROOT=$root \
    E2E_LABELS=$KIND_REAL_NODE_LABELS E2E_TIMEOUT=$E2E_TIMEOUT hack/test-tier.sh real-node e2e || rc=$?
fi
step "deleting cluster $KIND_CLUSTER"
"$KIND_DEV" delete --name "$KIND_CLUSTER"
exit $rc
