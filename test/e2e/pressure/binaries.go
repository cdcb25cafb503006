//go:build e2e

package pressuree2e

import (
	"testing"

	"github.com/microlet/microlet/internal/e2e"
)

// BinDir holds microlet and every plugin binary (see e2e.Main).
var BinDir string

// Main runs a test binary's tests with BinDir set. Call it from TestMain:
// os.Exit(pressuree2e.Main(m)).
func Main(m *testing.M) int { return e2e.Main(m, &BinDir) }
