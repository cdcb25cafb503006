package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestParseLevel(t *testing.T) {
	tests := []struct {
		name    string
		want    hclog.Level
		wantErr string
	}{
		{"trace", hclog.Trace, ""},
		{"debug", hclog.Debug, ""},
		{"info", hclog.Info, ""},
		{"warn", hclog.Warn, ""},
		{"error", hclog.Error, ""},
		{"INFO", hclog.NoLevel, `expected one of trace, debug, info, warn, error, got "INFO"`},
		{"off", hclog.NoLevel, `expected one of trace, debug, info, warn, error, got "off"`},
		{"", hclog.NoLevel, `expected one of trace, debug, info, warn, error, got ""`},
	}
	for _, tt := range tests {
		got, err := ParseLevel(tt.name)
		if got != tt.want || errString(err) != tt.wantErr {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v, %q", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestNewWritesAtItsLevel(t *testing.T) {
	var out bytes.Buffer
	l, err := New("info", true, &out)
	if err != nil {
		t.Fatal(err)
	}
	l.Named("pleg").Debug("hidden")
	l.Named("pleg").Info("shown", "pod", "default/web")
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("want exactly one JSON line, got %q: %v", out.String(), err)
	}
	want := map[string]any{"@level": "info", "@message": "shown", "@module": "microlet.pleg", "pod": "default/web"}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %v, want %v (line %q)", k, line[k], v, out.String())
		}
	}
}

func TestNewText(t *testing.T) {
	var out bytes.Buffer
	l, err := New("warn", false, &out)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("shown")
	if got := out.String(); !strings.Contains(got, "[WARN]  microlet: shown") || strings.Contains(got, "hidden") {
		t.Errorf("text output = %q", got)
	}
}

func TestNewRejectsBadLevel(t *testing.T) {
	if _, err := New("verbose", false, &bytes.Buffer{}); errString(err) != `log level: expected one of trace, debug, info, warn, error, got "verbose"` {
		t.Errorf("New with a bad level: %v", err)
	}
}

func TestSetLevelReachesDerivedLoggers(t *testing.T) {
	var out bytes.Buffer
	l, err := New("info", false, &out)
	if err != nil {
		t.Fatal(err)
	}
	child := l.Named("plugin").With("kind", "eviction")
	if err := SetLevel(l, "debug"); err != nil {
		t.Fatal(err)
	}
	if !child.IsDebug() {
		t.Error("after SetLevel(debug) a derived logger is not at debug")
	}
	if err := SetLevel(l, "chatty"); err == nil {
		t.Error("SetLevel accepted an unknown level")
	}
	if l.GetLevel() != hclog.Debug {
		t.Errorf("a failed SetLevel changed the level to %v", l.GetLevel())
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestDebugLogr(t *testing.T) {
	var out strings.Builder
	l := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Debug})
	log := DebugLogr(l).WithName("lease").WithValues("node", "a")
	log.Error(errors.New("connection refused"), "Failed to update lease")
	log.V(2).Info("detail")
	got := out.String()
	for _, want := range []string{"[DEBUG] lease: Failed to update lease: node=a error=\"connection refused\"", "[DEBUG] lease: detail: node=a"} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks %q", got, want)
		}
	}
	out.Reset()
	DebugLogr(hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Info})).Error(errors.New("x"), "hidden")
	if out.Len() != 0 {
		t.Errorf("logged at info level: %q", out.String())
	}
}
