package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/microlet/microlet/sdk/sdktest"
	"github.com/microlet/microlet/sdk/transport"
)

// Every name the executable serves is microlet-<kind>-<name> of the plugin
// it serves, and that plugin's identity says so.
func TestEveryNameServesItsPlugin(t *testing.T) {
	names := listNames(t)
	for _, want := range []string{"microlet-cgroup-default", "microlet-eviction-kubelet", "microlet-imagegc-lru", "microlet-probes-default", "microlet-stats-default", "microlet-devices-hostdev"} {
		if !slices.Contains(names, want) {
			t.Errorf("names %v lack %s, a plugin make run configures", names, want)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			h := sdktest.Subprocess(t, sdktest.BuildAs(t, ".", name))
			id := h.Identity()
			if got := "microlet-" + id.GetKind() + "-" + id.GetName(); got != name {
				t.Errorf("%s identifies as %s", name, got)
			}
		})
	}
}

// Run under any other name it says what it serves and fails.
func TestUnknownNameFails(t *testing.T) {
	bin := sdktest.BuildAs(t, ".", "microlet-eviction-nosuch")
	out, err := exec.Command(bin).CombinedOutput()
	if code := exitCode(err); code != 2 {
		t.Fatalf("exit code %d (%v); want 2\n%s", code, err, out)
	}
	if !strings.Contains(string(out), "microlet-eviction-kubelet") {
		t.Errorf("the message does not list the plugins it serves:\n%s", out)
	}
}

func listNames(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command(sdktest.Build(t, "."), "names").Output()
	if err != nil {
		t.Fatalf("names: %v", err)
	}
	return strings.Fields(string(out))
}

func exitCode(err error) int {
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// Launched by the core under any file name (a plugin block's `binary`), it
// serves the plugin the core asks for.
func TestServesWhatTheCoreAsksFor(t *testing.T) {
	h := sdktest.Subprocess(t, sdktest.Build(t, "."), sdktest.WithEnv(transport.EnvKind+"=imagegc", transport.EnvName+"=lru"))
	if id := h.Identity(); id.GetKind() != "imagegc" || id.GetName() != "lru" {
		t.Errorf("launched for imagegc/lru, it identifies as %s/%s", id.GetKind(), id.GetName())
	}
}
