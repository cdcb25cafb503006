package logging

import (
	"github.com/go-logr/logr"
	"github.com/hashicorp/go-hclog"
)

// DebugLogr is a logr.Logger (what client-go and component-helpers log
// through, taken from the context with klog.FromContext) writing to l at
// debug level, errors included. Their retries say the same thing every
// few seconds while the API server is away; the component using them logs
// the outage once, and these lines are for debugging.
func DebugLogr(l hclog.Logger) logr.Logger { return logr.New(debugSink{l}) }

type debugSink struct{ l hclog.Logger }

func (debugSink) Init(logr.RuntimeInfo) {}

func (s debugSink) Enabled(int) bool { return s.l.IsDebug() }

func (s debugSink) Info(_ int, msg string, kv ...any) { s.l.Debug(msg, kv...) }

func (s debugSink) Error(err error, msg string, kv ...any) {
	s.l.Debug(msg, append(kv, "error", err)...)
}

func (s debugSink) WithValues(kv ...any) logr.LogSink { return debugSink{s.l.With(kv...)} }

func (s debugSink) WithName(name string) logr.LogSink { return debugSink{s.l.Named(name)} }
