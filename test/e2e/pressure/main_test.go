//go:build e2e

package pressuree2e

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }
