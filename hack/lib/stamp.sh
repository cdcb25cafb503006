# Sourced by the build scripts of hack/kube-tools and hack/tools: each binary
# they build gets a stamp file next to it, BIN.stamp, saying what it was built
# from; a binary whose stamp matches is not built again.

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
