#!/usr/bin/env bash
# Runs the real-node tier and the kind tier of `make test` side by side, once their prerequisites are
# built (`make test-real-nodes` builds them first, sequentially: both tiers use bin/ and the caches).
# Most of either tier's time is spent waiting for real pods, so together they take about as long as
# the longer one instead of the sum of both (docs/kind.md, "Divided in `make test`").
#
# The kind tier writes to its own log, printed whole when it ends, so that neither tier's output is
# interleaved with the other's; a line says when it starts and when it ends.
#
# Environment (set by the Makefile): BIN_DIR, KIND_DEV, KIND_CLUSTER, KIND_IMAGES (the image tars),
# REGISTRY, IMAGE_TAG, KIND_E2E_LABELS, REAL_NODE_LABELS (this machine's node), KIND_REAL_NODE_LABELS
# (kind's node), E2E_TIMEOUT.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

kind_log=$BIN_DIR/kind-tier.log
kind_rc=$BIN_DIR/kind-tier.rc
rm -f "$kind_rc"

start=$(date +%s)
echo "=== [kind] starts beside the real-node tier (its log: $kind_log, printed when it ends)"
(
  hack/kind-tier.sh >"$kind_log" 2>&1
  echo $? >"$kind_rc"
) &
kind_pid=$!

E2E_BIN_DIR=$BIN_DIR E2E_REPO_ROOT=$root E2E_LABELS=$REAL_NODE_LABELS E2E_TIMEOUT=$E2E_TIMEOUT \
  hack/test-tier.sh real-node e2e
real_rc=$?
echo "=== [real-node] ended with $real_rc after $(( $(date +%s) - start ))s; waiting for the kind tier"

wait "$kind_pid"
rc=$(cat "$kind_rc" 2>/dev/null || echo 1)
echo "=== [kind] its log ($kind_log):"
cat "$kind_log"
if [ "$rc" = 0 ]; then
  echo "=== [kind] PASS ($(( $(date +%s) - start ))s, beside the real-node tier)"
else
  echo "=== [kind] FAIL (exit $rc; the log above)"
fi
echo "=== [real-node + kind] both ended after $(( $(date +%s) - start ))s"
[ "$real_rc" = 0 ] && [ "$rc" = 0 ]
