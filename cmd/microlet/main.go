// Command microlet is the node agent.
//
//	microlet [flags] [FILE]                   run the agent
//	microlet config validate [flags] [FILE]   check a config, including every plugin's block
//	microlet version                          print the version (also --version)
//	microlet help                             print the usage (also --help, -h)
//
// Flags are the kubelet's where it has one (--config, --config-dir,
// --root-dir, --pod-manifest-path, ...); see docs/configuration.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"

	"github.com/microlet/microlet/core/agent"
	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/logging"
	"github.com/microlet/microlet/internal/exepages"
)

// version is set at build time with -ldflags '-X main.version=...'.
var version = "dev"

func main() {
	args := os.Args[1:]
	switch {
	case len(args) >= 2 && args[0] == "config" && args[1] == "validate":
		os.Exit(validateCommand(args[2:]))
	default:
		if code, done := helpOrVersion(args, os.Stdout); done {
			os.Exit(code)
		}
		os.Exit(runCommand(args))
	}
}

// loadConfig parses flags (a positional FILE is the main config file) and
// loads the config from every source. --help prints the usage and returns
// pflag.ErrHelp.
func loadConfig(name string, args []string) (*config.Config, config.LoadOptions, error) {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	config.RegisterFlags(fs)
	fs.Usage = func() { printUsage(os.Stdout, fs) }
	if err := fs.Parse(args); err != nil {
		return nil, config.LoadOptions{}, err
	}
	opts := config.LoadOptionsFromFlags(fs, os.Environ())
	if fs.NArg() > 1 {
		return nil, opts, fmt.Errorf("expected at most one config file, got %q", fs.Args())
	}
	if fs.NArg() == 1 {
		if opts.MainFile != "" {
			return nil, opts, errors.New("give the config file either as an argument or with --config, not both")
		}
		opts.MainFile = fs.Arg(0)
	}
	cfg, err := config.Load(opts)
	return cfg, opts, err
}

func runCommand(args []string) int {
	cfg, loadOpts, err := loadConfig("microlet", args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "microlet: %v\n", err)
		return 2
	}
	if cfg.GOMAXPROCS > 0 {
		runtime.GOMAXPROCS(cfg.GOMAXPROCS)
	}
	logger, err := logging.New(cfg.LogLevel, cfg.LogJSON, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "microlet: %v\n", err)
		return 2
	}
	agent.Version = version
	logger.Info("starting", "version", version, "node", cfg.NodeName, "gomaxprocs", runtime.GOMAXPROCS(0))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := agent.New(cfg, agent.Options{Load: loadOpts, Logger: logger})
	if err != nil {
		logger.Error("cannot start", "error", err)
		return 1
	}
	go releaseMemory(ctx, logger)
	if err := a.Run(ctx); err != nil {
		logger.Error("stopped with an error", "error", err)
		return 1
	}
	return 0
}

// releaseMemory keeps the core's memory down to what it uses between its
// bursts of work (exepages.ReleaseBurstPages): it learns which pages of its
// executable its steady work (the PLEG's relist every second) keeps
// mapping and unmaps the others once each burst of work is over; every
// 10 s it collects and returns the free heap to the kernel. Of the 53 MB
// the core held with 30 pods, 32 MB were its executable, nearly all of it
// mapped once and never used again. At Go's default GOGC the heap grows to
// twice the live heap (8 MB at 30 pods) before a collection, and start-up's
// garbage stayed mapped until the scavenger returned it (docs/performance.md).
// A collection of that heap costs a few milliseconds of one CPU every 10 s.
func releaseMemory(ctx context.Context, logger hclog.Logger) {
	if err := exepages.ReleaseBurstPages(ctx); err != nil {
		logger.Warn("stopped releasing the executable's pages", "error", err)
	}
}
