package prober

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// expandStatic is upstream's ExpandContainerCommandOnlyStatic: $(NAME) in
// each argument becomes the value the container's env gives NAME (the
// literal value; a valueFrom variable expands to ""), $$ is an escaped $,
// and a reference to an unknown name, a lone $ and an unclosed $( stay as
// written (third_party/forked/golang/expansion).
func expandStatic(command []string, env []v1.EnvVar) []string {
	if len(command) == 0 {
		return nil
	}
	values := make(map[string]string, len(env))
	for _, e := range env {
		values[e.Name] = e.Value
	}
	out := make([]string, len(command))
	for i, arg := range command {
		out[i] = expand(arg, values)
	}
	return out
}

func expand(input string, values map[string]string) string {
	var b strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		b.WriteString(input[checkpoint:cursor])
		switch next := input[cursor+1]; {
		case next == '$':
			// $$ is an escaped $.
			b.WriteByte('$')
			cursor++
		case next == '(':
			end := strings.IndexByte(input[cursor+2:], ')')
			if end < 0 {
				// An unclosed $( stays as written.
				b.WriteString("$(")
				cursor++
				break
			}
			name := input[cursor+2 : cursor+2+end]
			if value, ok := values[name]; ok {
				b.WriteString(value)
			} else {
				b.WriteString("$(" + name + ")")
			}
			cursor += end + 2
		default:
			// A $ before anything else stays.
			b.WriteString(input[cursor : cursor+2])
			cursor++
		}
		checkpoint = cursor + 1
	}
	return b.String() + input[checkpoint:]
}
