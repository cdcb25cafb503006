package pluginhost

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestExitOfAProcessTheHostKilledIsNoError(t *testing.T) {
	var out bytes.Buffer
	pr := newProcess()
	log := exitLogger{Logger: hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Trace}), pr: pr}

	log.Error(goPluginExitMessage, "error", "signal: killed")
	if got := out.String(); !strings.Contains(got, "[ERROR]") {
		t.Errorf("a process that died on its own: %q, want an ERROR", got)
	}

	out.Reset()
	why := "refused at launch, never served: Configure: bad key"
	pr.killedBecause.Store(&why)
	log.Error(goPluginExitMessage, "error", "signal: killed")
	got := out.String()
	if strings.Contains(got, "[ERROR]") || !strings.Contains(got, "[INFO]") || !strings.Contains(got, "refused at launch, never served") {
		t.Errorf("a candidate the host refused: %q, want an INFO line with the reason", got)
	}
}
