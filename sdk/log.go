package sdk

import (
	"os"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/sdk/transport"
)

var pluginLogger atomic.Pointer[hclog.Logger]

// Log returns the plugin's logger. Lines go to standard error as JSON, and
// go-plugin forwards them into the core's log as plugin.<kind>.<name>.
func Log() hclog.Logger {
	if l := pluginLogger.Load(); l != nil {
		return *l
	}
	return hclog.NewNullLogger()
}

// newLogger logs at the level the core logs at, so that no line is shipped
// only to be dropped.
func newLogger() hclog.Logger {
	level := hclog.LevelFromString(os.Getenv(transport.EnvLogLevel))
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	l := hclog.New(&hclog.LoggerOptions{
		Level:      level,
		Output:     os.Stderr,
		JSONFormat: true,
	})
	pluginLogger.Store(&l)
	return l
}
