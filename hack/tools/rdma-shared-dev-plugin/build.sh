#!/usr/bin/env bash
# Builds Mellanox's RDMA shared device plugin (main.go here: its own main
# without the kernel RDMA check) for the devices e2e tests, statically, into
# OUT_DIR with a stamp of what it was built from; an up-to-date binary is
# skipped.
#
#   hack/tools/rdma-shared-dev-plugin/build.sh [OUT_DIR]   (default: <repo>/.cache/kube/bin)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
out="${1:-$repo/.cache/kube/bin}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$here"
source "$repo/hack/lib/stamp.sh"

name=k8s-rdma-shared-dp
version="$(go list -m -f '{{.Version}}' github.com/Mellanox/k8s-rdma-shared-dev-plugin)"
flags=(-trimpath -ldflags "-s -w")
stamp="$(build_stamp "$version" "${flags[*]}" go.mod go.sum main.go)"

if fresh "$out/$name" "$stamp"; then
	echo "tools: $name $version is up to date" >&2
	exit 0
fi
echo "tools: building $name $version into $out" >&2
CGO_ENABLED=0 go build "${flags[@]}" -o "$out/$name" .
echo "$stamp" >"$out/$name.stamp"
