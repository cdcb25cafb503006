// Package images holds the source of the programs that devnode bakes into
// its images, embedded so that a devnode can build them wherever it runs.
// Each is a package main that uses the standard library alone.
package images

import _ "embed"

// PauseSource is the source of the sandbox image's only program
// (pause/main.go).
//
//go:embed pause/main.go
var PauseSource []byte

// GRPCHealthSource is the source of the test image's gRPC health server
// (grpchealth/main.go), for gRPC probes.
//
//go:embed grpchealth/main.go
var GRPCHealthSource []byte
