package podspec

import (
	"strings"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
)

// Expand replaces $(NAME) references in input with lookup's values, as
// Kubernetes expands command, args, env values and subPathExpr (upstream's
// third_party/forked/golang/expansion, which no importable module carries):
//
//   - $(NAME) becomes NAME's value; an unknown NAME is left as written;
//   - $$ is an escaped $, so $$(NAME) becomes the literal $(NAME);
//   - a $ before anything else, and an unclosed $(, stay as written.
func Expand(input string, lookup func(name string) (string, bool)) string {
	var b strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		b.WriteString(input[checkpoint:cursor])
		read, isVar, advance := readVariableName(input[cursor+1:])
		if isVar {
			if value, ok := lookup(read); ok {
				b.WriteString(value)
			} else {
				b.WriteString("$(" + read + ")")
			}
		} else {
			b.WriteString(read)
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return b.String() + input[checkpoint:]
}

// readVariableName reads what follows a $: the content read, whether it is
// a variable name, and how many bytes it used.
func readVariableName(input string) (string, bool, int) {
	r, size := utf8.DecodeRuneInString(input)
	switch r {
	case '$':
		return "$", false, size
	case '(':
		if end := strings.IndexByte(input[1:], ')'); end >= 0 {
			return input[1 : end+1], true, end + 2
		}
		return "$(", false, 1
	}
	return "$" + string(r), false, size
}

// MapLookup looks names up in maps, the first that has one winning.
func MapLookup(maps ...map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, m := range maps {
			if v, ok := m[name]; ok {
				return v, true
			}
		}
		return "", false
	}
}

// ExpandStatic is upstream's ExpandContainerCommandOnlyStatic, as exec
// probes use it: $(NAME) in each argument becomes the literal value the
// container's env gives NAME (a valueFrom variable expands to "").
func ExpandStatic(command []string, env []v1.EnvVar) []string {
	if len(command) == 0 {
		return nil
	}
	values := make(map[string]string, len(env))
	for _, e := range env {
		values[e.Name] = e.Value
	}
	out := make([]string, len(command))
	for i, arg := range command {
		out[i] = Expand(arg, MapLookup(values))
	}
	return out
}
