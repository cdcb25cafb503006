// Package stdoutguard keeps a plugin's standard output clean for go-plugin's
// handshake line. It is a package of its own, importing only the standard
// library and x/sys, so that Go initializes it before the heavier packages
// a plugin links (gRPC, protobuf, and every dependency whose import path
// sorts after it): from then on nothing printed to standard output can reach
// the core ahead of the handshake.
package stdoutguard

import "os"

// CookieKey is the environment variable the core sets for every plugin it
// launches: transport.Handshake.MagicCookieKey, repeated here because
// importing transport would initialize gRPC before this package (a test
// keeps the two equal).
const CookieKey = "MICROLET_PLUGIN_MAGIC_COOKIE"

// handshake is the real standard output, set aside by init; nil when the
// process was not launched by the core.
var handshake *os.File

func init() {
	if os.Getenv(CookieKey) == "" {
		return // not launched by the core: leave stdout alone
	}
	handshake = redirectStdout()
}

// Handshake returns the real standard output for go-plugin's handshake
// line, or nil when the process was not launched by the core. Until then,
// file descriptor 1 points at standard error, so what a plugin prints early
// lands in its log instead of corrupting the handshake.
func Handshake() *os.File { return handshake }
