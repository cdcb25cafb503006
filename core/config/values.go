package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// valueKind is how values of one Go type are read. Values have two forms:
// the file form (what the HCL parser yields: string, int64, float64, bool,
// []any, map[string]any), which is what koanf merges, and text (environment
// variables and flags), which is first turned into the file form.
type valueKind struct {
	// expected says what a file must give, for "expected ..., got ...".
	expected string
	// expectedText is what text must look like, when it differs from expected.
	expectedText string
	// flagType is the type name pflag shows in --help.
	flagType string
	// fromValue converts the file form to the Go value; on failure it
	// returns a description of what it got instead.
	fromValue func(v any) (rv reflect.Value, got string)
	// fromText turns text into the file form; nil when the key can only be
	// set in a config file.
	fromText func(s string) (any, bool)
	// toValue renders a Go value in the file form.
	toValue func(rv reflect.Value) any
}

func (k *valueKind) textExpectation() string {
	if k.expectedText != "" {
		return k.expectedText
	}
	return k.expected
}

// valueKinds covers every Go type a config key may have.
var valueKinds = map[reflect.Type]*valueKind{
	reflect.TypeFor[string](): {
		expected: "a string",
		flagType: "string",
		fromValue: func(v any) (reflect.Value, string) {
			s, ok := v.(string)
			if !ok {
				return reflect.Value{}, describe(v)
			}
			return reflect.ValueOf(s), ""
		},
		fromText: func(s string) (any, bool) { return s, true },
		toValue:  func(rv reflect.Value) any { return rv.String() },
	},
	reflect.TypeFor[bool](): {
		expected: "true or false",
		flagType: "bool",
		fromValue: func(v any) (reflect.Value, string) {
			b, ok := v.(bool)
			if !ok {
				return reflect.Value{}, describe(v)
			}
			return reflect.ValueOf(b), ""
		},
		fromText: func(s string) (any, bool) {
			b, err := strconv.ParseBool(s)
			return b, err == nil
		},
		toValue: func(rv reflect.Value) any { return rv.Bool() },
	},
	reflect.TypeFor[int](): {
		expected: "a whole number",
		flagType: "int",
		fromValue: func(v any) (reflect.Value, string) {
			switch n := v.(type) {
			case int64:
				return reflect.ValueOf(int(n)), ""
			case float64:
				// HCL reads "2.0" as a float; a whole float is still a whole
				// number, as long as a float64 holds it exactly.
				if n == math.Trunc(n) && math.Abs(n) <= 1<<53 {
					return reflect.ValueOf(int(n)), ""
				}
			}
			return reflect.Value{}, describe(v)
		},
		fromText: func(s string) (any, bool) {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 0)
			return n, err == nil
		},
		toValue: func(rv reflect.Value) any { return rv.Int() },
	},
	reflect.TypeFor[time.Duration](): {
		expected: `a duration such as "2s"`,
		flagType: "duration",
		fromValue: func(v any) (reflect.Value, string) {
			s, ok := v.(string)
			if !ok {
				return reflect.Value{}, describe(v)
			}
			d, err := time.ParseDuration(s)
			if err != nil {
				return reflect.Value{}, describe(v)
			}
			return reflect.ValueOf(d), ""
		},
		fromText: func(s string) (any, bool) {
			_, err := time.ParseDuration(s)
			return s, err == nil
		},
		toValue: func(rv reflect.Value) any { return time.Duration(rv.Int()).String() },
	},
	reflect.TypeFor[[]string](): {
		expected:     "a list of strings",
		expectedText: "a comma-separated list",
		flagType:     "strings",
		fromValue: func(v any) (reflect.Value, string) {
			list, got := stringList(v)
			if got != "" {
				return reflect.Value{}, got
			}
			return reflect.ValueOf(list), ""
		},
		fromText: func(s string) (any, bool) { return anyList(splitList(s)), true },
		toValue:  func(rv reflect.Value) any { return anyList(rv.Interface().([]string)) },
	},
	reflect.TypeFor[map[string][]string](): {
		expected:     "a map of names to lists of strings",
		expectedText: `comma-separated name:value pairs such as "a:x,b:y"`,
		// The name pflag and the kubelet show for --manifest-url-header.
		flagType: "colonSeparatedMultimapStringString",
		fromValue: func(v any) (reflect.Value, string) {
			m, ok := v.(map[string]any)
			if !ok {
				return reflect.Value{}, describe(v)
			}
			out := make(map[string][]string, len(m))
			for _, name := range sortedKeys(m) {
				list, got := stringList(m[name])
				if got != "" {
					return reflect.Value{}, fmt.Sprintf("%s for %q", got, name)
				}
				out[name] = list
			}
			return reflect.ValueOf(out), ""
		},
		fromText: parseColonPairs,
		toValue: func(rv reflect.Value) any {
			out := map[string]any{}
			for name, values := range rv.Interface().(map[string][]string) {
				out[name] = anyList(values)
			}
			return out
		},
	},
	reflect.TypeFor[map[string]string](): {
		expected:     "a map of strings",
		expectedText: "key=value pairs separated by commas",
		flagType:     "mapStringString",
		fromText: func(s string) (any, bool) {
			out := map[string]any{}
			for pair := range strings.SplitSeq(s, ",") {
				if strings.TrimSpace(pair) == "" {
					continue
				}
				k, v, ok := strings.Cut(pair, "=")
				if !ok || strings.TrimSpace(k) == "" {
					return nil, false
				}
				out[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
			return out, true
		},
		fromValue: func(v any) (reflect.Value, string) {
			m, ok := v.(map[string]any)
			if !ok {
				return reflect.Value{}, describe(v)
			}
			out := make(map[string]string, len(m))
			for _, name := range sortedKeys(m) {
				s, ok := m[name].(string)
				if !ok {
					return reflect.Value{}, fmt.Sprintf("%s for %q", describe(m[name]), name)
				}
				out[name] = s
			}
			return reflect.ValueOf(out), ""
		},
		toValue: func(rv reflect.Value) any {
			out := map[string]any{}
			for name, value := range rv.Interface().(map[string]string) {
				out[name] = value
			}
			return out
		},
	},
	// An opaque block: kept exactly as parsed.
	reflect.TypeFor[map[string]any](): {
		expected: "a block",
		fromValue: func(v any) (reflect.Value, string) {
			m, ok := v.(map[string]any)
			if !ok {
				return reflect.Value{}, describe(v)
			}
			return reflect.ValueOf(m), ""
		},
		toValue: func(rv reflect.Value) any {
			m, _ := rv.Interface().(map[string]any)
			if m == nil {
				return map[string]any{}
			}
			return m
		},
	},
}

// describe renders a file-form value for "got ...".
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case []any:
		return "a list"
	case map[string]any:
		return "a block"
	default:
		return fmt.Sprint(v)
	}
}

// stringList converts a file-form list of strings.
func stringList(v any) ([]string, string) {
	list, ok := v.([]any)
	if !ok {
		return nil, describe(v)
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Sprintf("%s at index %d", describe(e), i)
		}
		out[i] = s
	}
	return out, ""
}

func anyList(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// splitList splits comma-separated text, dropping blanks around items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// parseColonPairs reads the kubelet's colonSeparatedMultimapStringString:
// "a:x,b:y,a:z" is {a: [x, z], b: [y]}.
func parseColonPairs(s string) (any, bool) {
	out := map[string]any{}
	for _, pair := range splitList(s) {
		name, value, ok := strings.Cut(pair, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, false
		}
		values, _ := out[name].([]any)
		out[name] = append(values, strings.TrimSpace(value))
	}
	return out, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
