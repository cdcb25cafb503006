#!/usr/bin/env bash
# Builds the upstream node conformance suite (e2e.test) and agnhost from
# k8s.io/kubernetes at the version this directory's go.mod pins (the same as
# hack/kube-tools).
#
#   hack/tools/conformance/build.sh [OUT_DIR]   (default: <repo>/.cache/kube/bin)
#
# Like hack/kube-tools/build.sh, each binary gets a stamp of what it was built
# from; a binary whose stamp matches is skipped (a cold e2e.test build takes
# several minutes on 2 cores).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
out="${1:-$repo/.cache/kube/bin}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$here"
source "$repo/hack/lib/stamp.sh"

version="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
# The suite checks the server's version against its own.
ldflags="$(kube_release_ldflags conformance "$version")"
flags=(-trimpath -ldflags "$ldflags")
stamp="$(build_stamp "$version" "${flags[*]}" go.mod go.sum nettools/*.go)"

if fresh "$out/e2e.test" "$stamp"; then
	echo "conformance: e2e.test $version is up to date" >&2
else
	echo "conformance: building e2e.test $version into $out" >&2
	start=$SECONDS
	# No vet: it is upstream's code, and vetting it takes minutes.
	CGO_ENABLED=0 go test -c -vet=off "${flags[@]}" -o "$out/e2e.test" k8s.io/kubernetes/test/e2e
	echo "$stamp" >"$out/e2e.test.stamp"
	echo "conformance: built e2e.test in $((SECONDS - start))s" >&2
fi
# agnhost, nonewprivs and nettools go into images on busybox-static
# (hack/conformance/images.go), so they must not need a libc; ginkgo runs
# the suite in parallel processes.
tools=(k8s.io/kubernetes/test/images/agnhost k8s.io/kubernetes/test/images/nonewprivs ./nettools github.com/onsi/ginkgo/v2/ginkgo)
if fresh "$out/agnhost" "$stamp" && fresh "$out/nonewprivs" "$stamp" && fresh "$out/nettools" "$stamp" && fresh "$out/ginkgo" "$stamp"; then
	echo "conformance: agnhost, nonewprivs, nettools, ginkgo are up to date" >&2
else
	echo "conformance: building agnhost, nonewprivs, nettools, ginkgo into $out" >&2
	start=$SECONDS
	CGO_ENABLED=0 go build "${flags[@]}" -o "$out/" "${tools[@]}"
	for pkg in "${tools[@]}"; do
		echo "$stamp" >"$out/${pkg##*/}.stamp"
	done
	echo "conformance: built agnhost, nonewprivs, nettools, ginkgo in $((SECONDS - start))s" >&2
fi
