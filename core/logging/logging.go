// Package logging builds the agent's logger: go-hclog, as go-plugin uses for
// the plugins' output, so plugin lines and core lines share one format.
package logging

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Name is the root logger's name; subsystems log through Named children.
const Name = "microlet"

// Levels are the accepted level names, most verbose first.
var Levels = []string{"trace", "debug", "info", "warn", "error"}

// ParseLevel reads a level name; only the names in Levels are accepted.
func ParseLevel(name string) (hclog.Level, error) {
	if !slices.Contains(Levels, name) {
		return hclog.NoLevel, fmt.Errorf("expected one of %s, got %q", strings.Join(Levels, ", "), name)
	}
	return hclog.LevelFromString(name), nil
}

// New returns the agent's root logger writing to out, as JSON lines when
// json is set. Loggers derived from it (Named, With) share its level, so
// SetLevel on the root changes them all.
func New(level string, json bool, out io.Writer) (hclog.InterceptLogger, error) {
	lvl, err := ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	return hclog.NewInterceptLogger(&hclog.LoggerOptions{
		Name:       Name,
		Level:      lvl,
		Output:     out,
		JSONFormat: json,
	}), nil
}

// SetLevel changes the level of l and every logger derived from it, as a
// configuration reload (SIGHUP) does. An invalid name leaves l unchanged.
func SetLevel(l hclog.Logger, level string) error {
	lvl, err := ParseLevel(level)
	if err != nil {
		return fmt.Errorf("log level: %w", err)
	}
	l.SetLevel(lvl)
	return nil
}
