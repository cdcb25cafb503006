package main

import (
	"strings"
	"testing"
)

func TestHelpAndVersion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "microlet config validate"},
		{[]string{"--help"}, "microlet config validate"},
		{[]string{"-h"}, "--pod-manifest-path"},
		{[]string{"--log-level", "debug", "--help"}, "microlet version"},
		{[]string{"version"}, "microlet " + version},
		{[]string{"--version"}, "microlet " + version},
	} {
		var out strings.Builder
		code, done := helpOrVersion(tc.args, &out)
		if !done || code != 0 || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%q: done %v, exit %d, output lacks %q:\n%s", tc.args, done, code, tc.want, out.String())
		}
	}
	for _, args := range [][]string{nil, {"node.hcl"}, {"--config", "help"}, {"--", "--help"}} {
		if _, done := helpOrVersion(args, &strings.Builder{}); done {
			t.Errorf("%q was read as help or version", args)
		}
	}
}
