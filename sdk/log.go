package sdk

import (
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/sdk/transport"
)

// Log returns the plugin's logger. Lines go to standard error as JSON, and
// go-plugin forwards them into the core's log as plugin.<kind>.<name>. It
// logs at the level the core logs at (from the environment at start, then
// from Configure), so that no line is shipped only to be dropped. Outside a
// plugin process (a test serving the plugin in-process) it writes to the
// test binary's standard error.
func Log() hclog.Logger { return pluginLogger() }

// pluginLogger is created once, on first use. It holds on to the standard
// error the process started with: after the handshake go-plugin replaces
// os.Stderr with a pipe the core discards.
var pluginLogger = sync.OnceValue(func() hclog.Logger {
	level := hclog.LevelFromString(os.Getenv(transport.EnvLogLevel))
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	return hclog.New(&hclog.LoggerOptions{
		Level:      level,
		Output:     os.Stderr,
		JSONFormat: true,
	})
})
