package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"

	"github.com/microlet/microlet/core/agent"
	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/pluginhost"
)

// validateCommand checks a config: every source parses and validates, and
// every plugin block is accepted by its own plugin (launched transiently for
// the purpose). It prints one line per problem and exits 1 if there is any.
func validateCommand(args []string) int {
	cfg, _, err := loadConfig("microlet config validate", args)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	problems := validatePlugins(cfg, os.Stderr)
	if problems > 0 {
		fmt.Fprintf(os.Stderr, "config: %d problem(s)\n", problems)
		return 1
	}
	fmt.Printf("config ok: %d plugin block(s) accepted by their plugins\n", len(cfg.Plugins))
	return 0
}

// validatePlugins asks each plugin about its block and reports problems at
// the line of the offending key when the config knows it.
func validatePlugins(cfg *config.Config, out io.Writer) int {
	socketDir, err := os.MkdirTemp("", "microlet-validate-")
	if err != nil {
		fmt.Fprintln(out, err)
		return 1
	}
	defer os.RemoveAll(socketDir)
	opts := agent.PluginHostOptions(cfg, hclog.NewNullLogger(), nil)
	opts.SocketDir = socketDir
	opts.WatchDir = false
	host, err := pluginhost.New(opts)
	if err != nil {
		fmt.Fprintln(out, err)
		return 1
	}
	defer host.Close(context.Background())

	problems := 0
	for i, spec := range agent.PluginSpecs(cfg) {
		block := cfg.Plugins[i]
		prefix := fmt.Sprintf("plugin %q %q", spec.Kind, spec.Name)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs, err := host.Validate(ctx, spec)
		cancel()
		if err != nil {
			problems++
			fmt.Fprintf(out, "%s: %s: %v\n", block.Position, prefix, err)
			continue
		}
		for _, e := range errs {
			problems++
			pos := configKeyPosition(cfg, block, e.Path)
			key := "config"
			if e.Path != "" {
				key += "." + e.Path
			}
			fmt.Fprintf(out, "%s: %s: %s: %s\n", pos, prefix, key, e.Message)
		}
	}
	return problems
}

// configKeyPosition finds where a key of a plugin's config body was set,
// trying the key, then its parents (a list index or a nested key the config
// does not track), and finally the block itself.
func configKeyPosition(cfg *config.Config, block config.Plugin, path string) config.Position {
	key := "plugin." + block.Kind + "." + block.Name + ".config"
	if path != "" {
		key += "." + path
	}
	for {
		if pos, ok := cfg.Position(key); ok {
			return pos
		}
		cut := strings.LastIndexAny(key, ".[")
		if cut <= 0 || !strings.Contains(key[:cut], ".config") {
			return block.Position
		}
		key = key[:cut]
	}
}
