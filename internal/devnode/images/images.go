// Package images holds the source of the programs that devnode bakes into
// its images, embedded so that a devnode can build them wherever it runs.
package images

import _ "embed"

// PauseSource is the source of the sandbox image's only program
// (pause/main.go), a package main that uses the standard library alone.
//
//go:embed pause/main.go
var PauseSource []byte
