//go:build !unix

package stdoutguard

import "os"

// redirectStdout cannot move descriptors here; standard output stays as it is.
func redirectStdout() *os.File { return nil }
