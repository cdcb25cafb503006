#!/usr/bin/env bash
# Builds the upstream Kubernetes components that tests and benchmarks run side
# by side with microlet: the control plane (kube-apiserver,
# kube-controller-manager, kube-scheduler), kubelet, kubectl and the sample
# device plugin, at the k8s.io/kubernetes version pinned in this directory's
# go.mod.
#
#   hack/kube-tools/build.sh [OUT_DIR]     (default: <repo>/.cache/kube/bin)
#
# A cold build takes several minutes on 2 cores, so each binary gets a stamp
# file next to it recording what it was built from (go.mod, go.sum, the Go
# toolchain, this script's flags); a binary whose stamp matches is skipped.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$repo/.cache/kube/bin}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$here"
source "$repo/hack/lib/stamp.sh"

# Upstream builds these statically (hack/lib/golang.sh KUBE_STATIC_BINARIES);
# the kubelet and the device plugin keep cgo, as in a release.
static_pkgs=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
	k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
cgo_pkgs=(k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/test/images/sample-device-plugin)

version="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
ldflags="$(kube_release_ldflags kube-tools "$version")"
flags=(-trimpath -tags selinux,notest,grpcnotrace -ldflags "$ldflags")

stamp="$(build_stamp "$version" "${flags[*]}" go.mod go.sum)"

# stale PKG... prints the packages whose binary is missing or was built from
# something else.
stale() {
	local pkg
	for pkg in "$@"; do
		if fresh "$out/${pkg##*/}" "$stamp"; then
			echo "kube-tools: ${pkg##*/} $version is up to date" >&2
		else
			echo "$pkg"
		fi
	done
}

# build CGO_ENABLED PKG... builds the packages in one go invocation, so that
# they share the compilation of their common dependencies.
build() {
	local cgo="$1"
	shift
	(($#)) || return 0
	echo "kube-tools: building ${*##*/} $version into $out" >&2
	local start=$SECONDS pkg
	CGO_ENABLED="$cgo" go build "${flags[@]}" -o "$out/" "$@"
	for pkg in "$@"; do
		echo "$stamp" >"$out/${pkg##*/}.stamp"
	done
	echo "kube-tools: built ${*##*/} in $((SECONDS - start))s" >&2
}

mapfile -t todo_static < <(stale "${static_pkgs[@]}")
mapfile -t todo_cgo < <(stale "${cgo_pkgs[@]}")
build 0 "${todo_static[@]}"
build 1 "${todo_cgo[@]}"
