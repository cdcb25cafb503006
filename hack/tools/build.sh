#!/usr/bin/env bash
# Builds the cluster's own tools that the cluster tests run unchanged against
# a microlet node, each from its own Go module under hack/tools/<dir> (a
# `tool` directive pins the version): metrics-server, promtool, crictl.
#
#   hack/tools/build.sh [OUT_DIR]     (default: <repo>/.cache/kube/bin)
#
# Like hack/kube-tools/build.sh, each binary gets a stamp next to it (the Go
# toolchain, the module's go.mod and go.sum, the flags); a binary whose stamp
# matches is not rebuilt. The tools share few packages, so they are built at
# the same time, each in its own go invocation: promtool alone takes minutes
# cold and the others' builds fill the gaps of its link steps.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$repo/.cache/kube/bin}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
source "$repo/hack/lib/stamp.sh"

# dir|binary|module of the version|ldflags variable that carries it|build tags
# promtool is built with Prometheus's own remove_all_sd tag (plugins/*.go):
# without the service discoveries of every cloud, whose SDKs are most of its
# build; the tests use only `promtool check metrics`.
tools=(
	"metrics-server|metrics-server|sigs.k8s.io/metrics-server|k8s.io/client-go/pkg/version.gitVersion|"
	"promtool|promtool|github.com/prometheus/prometheus|github.com/prometheus/common/version.Version|remove_all_sd"
	"crictl|crictl|sigs.k8s.io/cri-tools|sigs.k8s.io/cri-tools/pkg/version.Version|"
)

# build DIR BIN MODULE VAR TAGS: builds one tool if its stamp is stale.
build() {
	local dir="$here/$1" bin="$out/$2" module="$3" var="$4" tags="$5"
	cd "$dir"
	local version
	version="$(go list -m -f '{{.Version}}' "$module")"
	local ldflags="-s -w -X $var=$version"
	local stamp
	stamp="$(build_stamp "$version" "$ldflags${tags:+ -tags $tags}" go.mod go.sum)"
	if fresh "$bin" "$stamp"; then
		echo "tools: $2 $version is up to date" >&2
		return 0
	fi
	echo "tools: building $2 $version into $out" >&2
	local start=$SECONDS
	CGO_ENABLED=0 go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$bin.new" "$(awk '$1 == "tool" {print $2}' go.mod)"
	mv -f "$bin.new" "$bin"
	echo "$stamp" >"$bin.stamp"
	echo "tools: built $2 in $((SECONDS - start))s" >&2
}

pids=()
for t in "${tools[@]}"; do
	IFS='|' read -r dir bin module var tags <<<"$t"
	build "$dir" "$bin" "$module" "$var" "$tags" &
	pids+=($!)
done
status=0
for p in "${pids[@]}"; do
	wait "$p" || status=1
done
exit "$status"
