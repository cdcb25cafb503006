package config

import (
	"errors"
	"testing"
)

// A syntax error names the line of the mistake, not the later one where
// HCL v1's parser noticed it.
func TestSyntaxErrorsNameTheMistakesLine(t *testing.T) {
	tests := []struct {
		name, src string
		want      string
	}{
		{"a missing value, noticed at the next key",
			"node_name = \"a\"\nmax_pods = \nlog_level = \"info\"\n",
			`f.hcl:2:10: syntax error: expected a value after "=" (noticed at 3:1: Unknown token: 3:1 IDENT log_level)`},
		{"a missing \"=\", the next line's key read as a label",
			"node_name = \"a\"\nlog_level \"info\"\nmax_pods = 10\n",
			`f.hcl:2:1: syntax error: expected "=" or "{" after log_level (noticed at 3:10: nested object expected: LBRACE got: ASSIGN)`},
		{"an unclosed list, noticed at the end of the file",
			"plugin \"eviction\" \"kubelet\" {\n  config {\n    hard = [\"x\"\n  }\n}\nport = 0\n",
			`f.hcl:3:12: syntax error: this "[" is never closed (noticed at 7:2: object expected closing RBRACE got: EOF)`},
		{"an unclosed block",
			"plugin \"eviction\" \"kubelet\" {\n  config {\n    hard = [\"x\"]\n}\nport = 0\n",
			`f.hcl:1:29: syntax error: this "{" is never closed (noticed at 6:2: object expected closing RBRACE got: EOF)`},
		{"the parser's line is right: its message stands",
			"max_pods = 5\nlog_level = = 3\n",
			`f.hcl:2:13: syntax error: Unknown token: 2:13 ASSIGN =`},
		{"an unterminated string",
			"max_pods = 5\nlog_level = \"info\nport = 0\n",
			`f.hcl:2:18: syntax error: literal not terminated`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newHCLParser("f.hcl").Unmarshal([]byte(tt.src))
			var e *Error
			if !errors.As(err, &e) || e.Error() != tt.want {
				t.Errorf("error:\n  %v\nwant:\n  %s", err, tt.want)
			}
		})
	}
}
