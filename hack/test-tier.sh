#!/usr/bin/env bash
# Runs one test tier over modules and ends with a summary that names the tier, the module and every
# failed test or Ginkgo spec.
#   hack/test-tier.sh unit|integration|e2e|real-node MODULE...
set -uo pipefail
tier=$1; shift
root=$(cd "$(dirname "$0")/.." && pwd)
logdir=$(mktemp -d)
failed=()
start=$(date +%s)

for m in "$@"; do
  cd "$root/$m" || exit 1
  case $tier in
    unit)
      # Everything except the integration and e2e tiers' packages.
      pkgs=$(go list ./... | grep -v -E '/test/integration(/|$)|/e2e/suite(/|$)|/e2e/realnode/suite(/|$)')
      args=(-count=1 $pkgs) ;;
    integration)
      [ -d test/integration ] || continue
      args=(-count=1 -timeout 20m ./test/integration/...) ;;
    e2e)
      args=(-v -count=1 -timeout "${E2E_TIMEOUT:-30m}" ./suite/... -args -ginkgo.v -ginkgo.no-color -ginkgo.label-filter="${E2E_LABELS:-}") ;;
    real-node)
      [ -d realnode/suite ] || continue
      args=(-v -count=1 -timeout "${E2E_TIMEOUT:-30m}" ./realnode/suite/... -args -ginkgo.v -ginkgo.no-color -ginkgo.label-filter="${E2E_LABELS:-}") ;;
    *) echo "unknown tier $tier"; exit 2 ;;
  esac
  echo "=== [$tier] $m"
  log="$logdir/$m.log"
  if ! go test "${args[@]}" 2>&1 | tee "$log"; then
    failed+=("$m")
  fi
done

echo
if [ ${#failed[@]} -eq 0 ]; then
  echo "=== [$tier] PASS: $* ($(( $(date +%s) - start ))s)"
  rm -rf "$logdir"
  exit 0
fi
echo "=== [$tier] FAIL in module(s): ${failed[*]}"
for m in "${failed[@]}"; do
  grep -E -- '^(\s*)--- FAIL|^FAIL\s|\[FAIL\]|panic:|build failed|cannot find|undefined:' "$logdir/$m.log" | sed "s/^/  [$tier] $m: /" | head -50
done
echo "(full logs in $logdir)"
exit 1
