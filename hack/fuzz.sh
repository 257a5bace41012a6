#!/usr/bin/env bash
# Runs every Go fuzz target for FUZZTIME each, one after another, and stops at the first failure.
#
#   hack/fuzz.sh                    all targets, FUZZTIME (default 30s) each
#   hack/fuzz.sh FuzzA FuzzB        only these targets
#   hack/fuzz.sh --list             print module:package:target lines
#   FUZZTIME=5m hack/fuzz.sh        longer runs (any `go test -fuzztime` value, e.g. 100000x)
#
# FUZZMINIMIZETIME (default 100x) bounds how long go test minimises each new input (the default of
# go test, 60s, can take a whole short run). A failing input is written to
# <module>/<package>/testdata/fuzz/<target>/<hash>: commit it as a regression input (plain `go test`,
# and so `make test`, runs every target on its seeds and on testdata/fuzz) together with the fix.
set -euo pipefail

# module:package:target, in the order they run.
targets=(
  catalogd:./internal/fbc:FuzzWalkMatchesDeclcfg
  catalogd:./internal/fbc:FuzzCanonicalize
  catalogd:./internal/fbc:FuzzMayHaveAliases
  catalogd:./internal/metadataapi:FuzzContinueToken
  catalogd:./internal/metadataapi:FuzzListSelectors
  rukpak:./pkg/source:FuzzExtractArchive
  rukpak:./internal/provisioner/helm:FuzzHelmIgnore
  rukpak:./internal/provisioner/registryv1:FuzzRenderCSV
  rukpak:./internal/provisioner/kustomize:FuzzKustomizePath
  rukpak:./internal/provisioner/manifest:FuzzDecodeMatchesKubernetes
  deppy:./pkg/operators:FuzzVersionRange
)

root=$(cd "$(dirname "$0")/.." && pwd)
FUZZTIME=${FUZZTIME:-30s}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-100x}

if [ "${1:-}" = "--list" ]; then
  printf '%s\n' "${targets[@]}"
  exit 0
fi

# Every fuzz target of the repository must be listed above, so that none is silently left out.
listed=" ${targets[*]} "
missing=0
for m in catalogd deppy e2e operator-controller platform rukpak; do
  while IFS=: read -r file name; do
    pkg=./$(dirname "${file#"$root/$m/"}")
    [ "$pkg" = "./." ] && pkg=.
    if [[ $listed != *" $m:$pkg:$name "* ]]; then
      echo "fuzz: $m:$pkg:$name is not listed in hack/fuzz.sh; add it to the targets array" >&2
      missing=1
    fi
  done < <(grep -rHo --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*' "$root/$m" | sed 's/:func /:/')
done
[ $missing -eq 0 ] || exit 2

selected=("${targets[@]}")
if [ $# -gt 0 ]; then
  selected=()
  for want in "$@"; do
    found=
    for t in "${targets[@]}"; do
      if [ "${t##*:}" = "$want" ]; then selected+=("$t"); found=1; fi
    done
    [ -n "$found" ] || { echo "fuzz: no target $want (see hack/fuzz.sh --list)" >&2; exit 2; }
  done
fi

start=$(date +%s)
for t in "${selected[@]}"; do
  IFS=: read -r module pkg name <<<"$t"
  echo "=== fuzz $module $pkg $name for $FUZZTIME"
  if ! (cd "$root/$module" && go test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "$pkg"); then
    echo "=== fuzz FAIL: $module $pkg $name (the failing input is under $module/${pkg#./}/testdata/fuzz/$name/)"
    exit 1
  fi
done
echo "=== fuzz PASS: ${#selected[@]} targets, $FUZZTIME each ($(( $(date +%s) - start ))s)"
