//go:build tools

// The e2e suite is a test binary (go test -c), not a tool; importing it here
// keeps its dependencies in go.mod and go.sum.
package tools

import _ "k8s.io/kubernetes/test/e2e"
