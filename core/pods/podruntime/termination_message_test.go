package podruntime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// criLog renders lines as a CRI log: "stream tag content" each.
func criLog(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "2024-05-01T10:00:00.123456789Z %s\n", l)
	}
	return b.String()
}

func TestWithTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	message := writeFile(t, filepath.Join(dir, "msg"), "disk full")
	empty := writeFile(t, filepath.Join(dir, "empty"), "")
	big := writeFile(t, filepath.Join(dir, "big"), "HEAD"+strings.Repeat("x", maxTerminationMessageLength))
	log := writeFile(t, filepath.Join(dir, "0.log"), criLog("stdout F starting", "stderr P fatal: ", "stderr F cannot open db"))
	mounts := func(host string) []*runtimeapi.Mount {
		return []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: dir}, {ContainerPath: "/dev/termination-log", HostPath: host}}
	}
	file := annotatedContainer{TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile}
	fallback := annotatedContainer{TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError}

	for _, tc := range []struct {
		name   string
		status *runtimeapi.ContainerStatus
		a      annotatedContainer
		want   string
	}{
		{name: "the file's content", status: &runtimeapi.ContainerStatus{ExitCode: 1, Mounts: mounts(message), LogPath: log}, a: file, want: "disk full"},
		{name: "after the runtime's message", status: &runtimeapi.ContainerStatus{ExitCode: 137, Message: "OOMKilled", Mounts: mounts(message)}, a: file,
			want: "OOMKilled: disk full"},
		{name: "only the last 4096 bytes", status: &runtimeapi.ContainerStatus{Mounts: mounts(big)}, a: file, want: strings.Repeat("x", maxTerminationMessageLength)},
		{name: "empty file, File policy", status: &runtimeapi.ContainerStatus{ExitCode: 1, Mounts: mounts(empty), LogPath: log}, a: file, want: ""},
		{name: "empty file, fallback to the log on failure", status: &runtimeapi.ContainerStatus{ExitCode: 1, Mounts: mounts(empty), LogPath: log}, a: fallback,
			want: "starting\nfatal: cannot open db\n"},
		{name: "no fallback when it succeeded", status: &runtimeapi.ContainerStatus{ExitCode: 0, Mounts: mounts(empty), LogPath: log}, a: fallback, want: ""},
		{name: "no fallback when it could not run", status: &runtimeapi.ContainerStatus{ExitCode: 128, Reason: "ContainerCannotRun", Mounts: mounts(empty), LogPath: log},
			a: fallback, want: ""},
		{name: "the file wins over the log", status: &runtimeapi.ContainerStatus{ExitCode: 1, Mounts: mounts(message), LogPath: log}, a: fallback, want: "disk full"},
		{name: "missing file falls back", status: &runtimeapi.ContainerStatus{ExitCode: 1, Mounts: mounts(filepath.Join(dir, "gone")), LogPath: log}, a: fallback,
			want: "starting\nfatal: cannot open db\n"},
		{name: "no mount at the path falls back", status: &runtimeapi.ContainerStatus{ExitCode: 1, LogPath: log}, a: fallback,
			want: "starting\nfatal: cannot open db\n"},
		{name: "unreadable log", status: &runtimeapi.ContainerStatus{ExitCode: 1, LogPath: filepath.Join(dir, "nolog")}, a: fallback,
			want: "Error on reading termination message from logs: open " + filepath.Join(dir, "nolog") + ": no such file or directory"},
		{name: "no path", status: &runtimeapi.ContainerStatus{ExitCode: 1, Message: "Error", Mounts: mounts(message)}, a: annotatedContainer{}, want: "Error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := withTerminationMessage(tc.status, tc.a); got != tc.want {
				t.Errorf("withTerminationMessage = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLogTailLimits(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i := range 200 {
		lines = append(lines, fmt.Sprintf("stdout F line %03d", i))
	}
	got := logTail(writeFile(t, filepath.Join(dir, "many.log"), criLog(lines...)))
	if !strings.HasPrefix(got, "line 120\n") || !strings.HasSuffix(got, "line 199\n") || strings.Count(got, "\n") != 80 {
		t.Errorf("tail of 200 lines = %q..., want lines 120-199", got[:min(len(got), 40)])
	}

	long := strings.Repeat("y", 100)
	lines = nil
	for range 50 {
		lines = append(lines, "stderr F "+long)
	}
	got = logTail(writeFile(t, filepath.Join(dir, "long.log"), criLog(lines...)))
	if len(got) != maxTerminationMessageLogLength || !strings.HasSuffix(got, long+"\n") {
		t.Errorf("tail of long lines is %d bytes, want the last %d", len(got), maxTerminationMessageLogLength)
	}

	// Lines that do not parse are skipped; a last line without a newline is kept.
	mixed := writeFile(t, filepath.Join(dir, "mixed.log"), "garbage\n"+criLog("stdout F ok")+"2024-05-01T10:00:00Z stdout F unterminated")
	if got := logTail(mixed); got != "ok\nunterminated\n" {
		t.Errorf("tail of a mixed log = %q", got)
	}
}
