# Sourced by the build scripts of hack/kube-tools and hack/tools: each binary
# they build gets a stamp file next to it, BIN.stamp, saying what it was built
# from; a binary whose stamp matches is not built again. Those that build
# from k8s.io/kubernetes also take its release version flags from here.

# build_stamp VERSION FLAGS FILE... prints the stamp of a build: the version,
# and a hash of the Go toolchain, the build flags and the files (go.mod,
# go.sum, sources).
build_stamp() {
	local version="$1" flags="$2"
	shift 2
	echo "$version $({
		go version
		echo "$flags"
		cat "$@"
	} | sha256sum | cut -d' ' -f1)"
}

# fresh BIN STAMP succeeds when BIN is there and was built from what STAMP
# says.
fresh() { [[ -x "$1" && "$(cat "$1.stamp" 2>/dev/null)" == "$2" ]]; }

# kube_release_ldflags WHO VERSION prints the -ldflags of upstream's release
# build (hack/lib/version.sh, hack/lib/golang.sh) for k8s.io/kubernetes
# VERSION, so that `--version` and the version a component reports (or a
# suite checks the server's against) are real. WHO prefixes the error when
# VERSION, read from ./go.mod, is not vMAJOR.MINOR.PATCH.
kube_release_ldflags() {
	local who="$1" version="$2" pkg
	if [[ ! "$version" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+ ]]; then
		echo "$who: unexpected k8s.io/kubernetes version '$version' in $PWD/go.mod (want vMAJOR.MINOR.PATCH)" >&2
		return 1
	fi
	local ldflags="-s -w"
	for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
		ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=${BASH_REMATCH[1]} -X $pkg.gitMinor=${BASH_REMATCH[2]} -X $pkg.gitTreeState=clean"
	done
	echo "$ldflags"
}
