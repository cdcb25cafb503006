//go:build e2e

package shutdown

import (
	"os"
	"testing"

	"github.com/microlet/microlet/internal/lastresort"
)

// TestMain runs the tests under the lastresort watchdog, which tears down
// what they started before the binary's -test.timeout would.
func TestMain(m *testing.M) { os.Exit(lastresort.Main(m)) }
