package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/spf13/pflag"

	"github.com/microlet/microlet/core/config"
)

// commands is the usage's first part: what microlet does with what.
const commands = `microlet is a Kubernetes node agent.

Usage:
  microlet [flags] [FILE]                   run the agent (FILE: the config file, as --config)
  microlet config validate [flags] [FILE]   check a config, including every plugin's block
  microlet version                          print the version (also --version)
  microlet help                             print this help (also --help, -h)

Flags (the same for running and for config validate; docs/configuration.md):
`

// printUsage writes the commands and fs's flags.
func printUsage(out io.Writer, fs *pflag.FlagSet) {
	fmt.Fprint(out, commands)
	fmt.Fprint(out, fs.FlagUsages())
}

// helpOrVersion answers "help", "version" and their flag spellings given
// as the only argument or among the agent's flags (before any "--"), so
// that `microlet --log-level debug --version` is not read as a run.
// done says whether args asked for one of them; code is the exit status.
func helpOrVersion(args []string, out io.Writer) (code int, done bool) {
	if end := slices.Index(args, "--"); end >= 0 {
		args = args[:end]
	}
	switch {
	case len(args) == 1 && args[0] == "help", slices.Contains(args, "--help"), slices.Contains(args, "-h"):
		fs := pflag.NewFlagSet("microlet", pflag.ContinueOnError)
		config.RegisterFlags(fs)
		printUsage(out, fs)
		return 0, true
	case len(args) == 1 && args[0] == "version", slices.Contains(args, "--version"):
		fmt.Fprintln(out, "microlet", version)
		return 0, true
	}
	return 0, false
}
