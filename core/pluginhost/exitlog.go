package pluginhost

import "github.com/hashicorp/go-hclog"

// goPluginExitMessage is what go-plugin logs when a plugin process ends.
const goPluginExitMessage = "plugin process exited"

// exitLogger is the logger go-plugin gets for one process. go-plugin logs
// every non-zero exit at ERROR ("plugin process exited: signal: killed"),
// which for a process the host itself killed (a candidate refused at
// launch, a hung or unresponsive process) reads like a crash of the
// serving plugin. Those exits are logged at INFO with the host's reason.
type exitLogger struct {
	hclog.Logger
	pr *process
}

func (l exitLogger) Error(msg string, args ...any) {
	if why := l.pr.killedBecause.Load(); msg == goPluginExitMessage && why != nil {
		l.Logger.Info("plugin process stopped by the host", append(args, "reason", *why)...)
		return
	}
	l.Logger.Error(msg, args...)
}
