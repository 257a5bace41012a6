#!/usr/bin/env bash
# Builds the chart and the controller images of an earlier commit of this repository, the "before" of
# the OLM upgrade e2e spec (label olm-upgrade, e2e/realnode/suite/olm_upgrade_test.go; docs/deploy.md,
# "Upgrading OLM v1"). `make olm-upgrade-prev` runs it with the pinned OLM_UPGRADE_PREV_COMMIT.
#
#   hack/olm-upgrade-prev.sh COMMIT
#
# The commit is checked out as a `git worktree` and built with its own make targets (the three
# controller binaries, then `make images`: no Docker). What the spec needs is kept, by commit, in
#
#   $OLMV1_CACHE_DIR/olm-upgrade/<commit>/chart/            the commit's deploy/charts/olmv1
#   $OLMV1_CACHE_DIR/olm-upgrade/<commit>/images/<name>.tar  its catalogd, rukpak, operator-controller
#   $OLMV1_CACHE_DIR/olm-upgrade/<commit>/done               written last: the build is complete
#
# and the worktree is removed again. A second run finds `done` and builds nothing. The Go build and
# module caches are the user's own, so a cold build compiles only what the commit changed.
set -euo pipefail
commit=${1:?usage: hack/olm-upgrade-prev.sh COMMIT (a full commit hash)}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OLMV1_CACHE_DIR:-$HOME/.cache/olmv1}/olm-upgrade/$commit

if [ -f "$out/done" ]; then
  echo "olm-upgrade-prev: chart and images of $commit cached in $out"
  exit 0
fi
mkdir -p "$out"
# One build per commit at a time: another run (a CI run beside this one) waits for it.
exec 9>"$out/.build.lock"
if ! flock -n 9; then
  echo "olm-upgrade-prev: another build of $commit is running; waiting for it ($out/.build.lock)"
  flock 9
fi
if [ -f "$out/done" ]; then
  echo "olm-upgrade-prev: chart and images of $commit cached in $out"
  exit 0
fi
if ! git -C "$root" cat-file -e "$commit^{commit}" 2>/dev/null; then
  echo "olm-upgrade-prev: commit $commit is not in this clone ($root); a shallow clone needs \`git fetch --unshallow\`" >&2
  exit 1
fi

src=$out/src
start=$(date +%s)
git -C "$root" worktree remove --force "$src" >/dev/null 2>&1 || true
rm -rf "$src" "$out/chart" "$out/images"
git -C "$root" worktree prune
echo "olm-upgrade-prev: building the chart and images of $commit in a worktree ($src); once, cached in $out"
git -C "$root" worktree add --detach --quiet "$src" "$commit"
progress_pid=
cleanup() {
  [ -n "$progress_pid" ] && kill "$progress_pid" 2>/dev/null
  git -C "$root" worktree remove --force "$src" >/dev/null 2>&1 || rm -rf "$src"
  git -C "$root" worktree prune
}
trap cleanup EXIT
(
  while sleep 30; do echo "olm-upgrade-prev: still building $commit ($(( $(date +%s) - start ))s)"; done
) &
progress_pid=$!

# The commit's own targets: its three controllers, then its images from them (-o build: `make images`
# would otherwise build every binary of `make build`, which the images do not contain).
make -C "$src" --no-print-directory bin/catalogd bin/rukpak bin/operator-controller
make -C "$src" --no-print-directory -o build images REGISTRY=localhost/olmv1-prev IMAGE_TAG="${commit:0:12}"

mkdir -p "$out/images"
cp "$src"/bin/images/{catalogd,rukpak,operator-controller}.tar "$out/images/"
cp -r "$src/deploy/charts/olmv1" "$out/chart"
git -C "$src" rev-parse HEAD >"$out/done"
echo "olm-upgrade-prev: built $commit in $(( $(date +%s) - start ))s: $out"
