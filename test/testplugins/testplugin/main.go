// Command testplugin is a plugin for tests. It serves the kind and name of
// the file it runs as (microlet-<kind>-<name>, kind eviction or devices), so
// one build installed under several names is several plugins.
//
// Set at build time (-ldflags -X): main.version, the plugin version it
// reports, so a swap is visible; main.refuseConfig=true, to refuse every
// Configure, for a swap to a binary that cannot start.
//
// Flags (Spec.Args): -claim-name reports another name than the file's;
// -exit-after-configure ends the process that long after Configure;
// -spawn-child starts "sleep 1000" on Configure, sharing the plugin's stderr,
// and logs its pid as "spawned child".
//
// Its config block: threshold, a positive whole number (default 1).
//
// Configure logs "configured" with the process's rss_kb and pss_kb, read
// before the SDK releases its start-up memory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/test/testplugins/smaps"
)

var (
	version      = "1.0.0"
	refuseConfig = "false"
)

type config struct {
	Threshold int `json:"threshold"`
}

func (c *config) SetDefaults() { c.Threshold = 1 }

func (c *config) Validate() error {
	if c.Threshold <= 0 {
		return sdk.ConfigError{Path: "threshold", Message: fmt.Sprintf("must be a positive whole number, got %d", c.Threshold)}
	}
	return nil
}

type testPlugin struct {
	exitAfterConfigure time.Duration
	spawnChild         bool
}

func (p *testPlugin) Configure(ctx context.Context, c *config, host *sdk.Host) error {
	if refuseConfig == "true" {
		return errors.New("this build refuses every config (built with main.refuseConfig=true)")
	}
	if host != nil {
		node, err := host.Node(ctx)
		if err != nil {
			return fmt.Errorf("ask the core's host service for the node: %w", err)
		}
		sdk.Log().Info("host service answered", "node", node.GetName())
	}
	// Memory as configured, before the SDK releases its start-up memory
	// (it does once Configure returns), for the benchmarks.
	mem, err := smaps.Rollup("self")
	if err != nil {
		return fmt.Errorf("read own memory use: %w", err)
	}
	sdk.Log().Info("configured", "version", version, "threshold", c.Threshold, "pid", os.Getpid(), "rss_kb", mem.RssKB, "pss_kb", mem.PssKB)
	if p.spawnChild {
		child := exec.Command("sleep", "1000")
		child.Stderr = os.NewFile(2, "stderr") // the pipe to the core, not go-plugin's replacement
		if err := child.Start(); err != nil {
			return fmt.Errorf("spawn a child: %w", err)
		}
		sdk.Log().Info("spawned child", "child_pid", child.Process.Pid)
	}
	if p.exitAfterConfigure > 0 {
		time.AfterFunc(p.exitAfterConfigure, func() {
			sdk.Log().Warn("exiting after configure, as asked")
			os.Exit(3)
		})
	}
	return nil
}

func (p *testPlugin) Synchronize(context.Context, *evictionv1.SynchronizeRequest) (*evictionv1.SynchronizeResponse, error) {
	return &evictionv1.SynchronizeResponse{}, nil
}

func (p *testPlugin) ListAndWatch(ctx context.Context, send func([]*devicesv1.Resource) error) error {
	if err := send(nil); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

func (p *testPlugin) Allocate(context.Context, *devicesv1.AllocateRequest) (*devicesv1.AllocateResponse, error) {
	return &devicesv1.AllocateResponse{}, nil
}

func main() {
	kind, name, ok := strings.Cut(strings.TrimPrefix(filepath.Base(os.Args[0]), "microlet-"), "-")
	if !ok {
		fmt.Fprintf(os.Stderr, "testplugin: run it as microlet-<kind>-<name>, not %s\n", os.Args[0])
		os.Exit(2)
	}
	p := &testPlugin{}
	flag.StringVar(&name, "claim-name", name, "the plugin name to report")
	flag.DurationVar(&p.exitAfterConfigure, "exit-after-configure", 0, "exit this long after Configure")
	flag.BoolVar(&p.spawnChild, "spawn-child", false, "start a child process on Configure")
	flag.Parse()
	sdk.Serve(sdk.Info{Kind: kind, Name: name, Version: version}, p)
}
