package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
)

type thresholds struct {
	MemoryAvailable Quantity `json:"memory_available"`
	NodefsAvailable Quantity `json:"nodefs_available,omitzero"`
}

type device struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
}

// level decodes through UnmarshalText, as json would.
type level string

func (l *level) UnmarshalText(b []byte) error {
	switch s := string(b); s {
	case "low", "high":
		*l = level(s)
		return nil
	default:
		return fmt.Errorf("expected low or high, got %q", s)
	}
}

type common struct {
	Verbose bool `json:"verbose"`
}

type testConfig struct {
	common
	Name    string              `json:"name"`
	Count   int8                `json:"count"`
	Size    uint16              `json:"size"`
	Ratio   float32             `json:"ratio"`
	Enabled bool                `json:"enabled"`
	Hard    thresholds          `json:"hard"`
	Soft    *thresholds         `json:"soft,omitempty"`
	Period  Duration            `json:"period"`
	Tags    []string            `json:"tags"`
	Limits  map[string]Quantity `json:"limits,omitempty"`
	Devices []device            `json:"devices,omitempty"`
	Extra   any                 `json:"extra,omitempty"`
	Level   level               `json:"level"`
	Ignored string              `json:"-"`
	hidden  string
}

func (c *testConfig) SetDefaults() {
	c.Name, c.Count, c.Tags = "default", 3, []string{"a"}
	c.Hard.MemoryAvailable = MustParseQuantity("100Mi")
	c.Period = Duration{30 * time.Second}
}

func (c *testConfig) Validate() error {
	switch c.Name {
	case "joined":
		return errors.Join(
			ConfigError{Path: "name", Message: "must not be joined"},
			ConfigErrors{{Path: "count", Message: "odd"}, {Message: "the block as a whole"}})
	case "plain":
		return errors.New("name and count disagree")
	}
	return nil
}

func TestDecodeConfig(t *testing.T) {
	const defaults = `{"verbose":false,"name":"default","count":3,"size":0,"ratio":0,"enabled":false,"hard":{"memory_available":"100Mi"},"period":"30s","tags":["a"],"level":""}`
	for _, c := range []struct {
		name  string
		block map[string]any // nil sends no block at all
		want  string         // the decoded config as JSON
		errs  []string       // or the errors, "path: message"
	}{
		{name: "no block", want: defaults},
		{name: "empty block", block: map[string]any{}, want: defaults},
		{name: "null keeps the default", block: map[string]any{"name": nil, "hard": nil}, want: defaults},
		{
			name: "every kind of key",
			block: map[string]any{
				"verbose": true, "name": "x", "count": -128, "size": 65535, "ratio": 0.5, "enabled": true,
				"hard":    map[string]any{"nodefs_available": "10Gi"},
				"soft":    map[string]any{"memory_available": 1e9},
				"period":  "1m30s",
				"tags":    []any{"b", "c"},
				"limits":  map[string]any{"cpu": "250m", "memory.available": "1Gi"},
				"devices": []any{map[string]any{"path": "/dev/a", "mode": "rw"}},
				"extra":   map[string]any{"any": []any{1.0, "thing"}},
				"level":   "high",
			},
			want: `{"verbose":true,"name":"x","count":-128,"size":65535,"ratio":0.5,"enabled":true,` +
				`"hard":{"memory_available":"100Mi","nodefs_available":"10Gi"},"soft":{"memory_available":"1G"},` +
				`"period":"1m30s","tags":["b","c"],"limits":{"cpu":"250m","memory.available":"1Gi"},` +
				`"devices":[{"path":"/dev/a","mode":"rw"}],"extra":{"any":[1,"thing"]},"level":"high"}`,
		},
		{
			name:  "HCL block written once, as a list of one",
			block: map[string]any{"hard": []any{map[string]any{"memory_available": "1Gi"}}},
			want:  strings.Replace(defaults, `"100Mi"`, `"1Gi"`, 1),
		},
		{
			name:  "one block where a list of blocks is expected",
			block: map[string]any{"devices": map[string]any{"path": "/dev/b"}},
			want:  strings.Replace(defaults, `"tags":["a"]`, `"tags":["a"],"devices":[{"path":"/dev/b","mode":""}]`, 1),
		},
		{
			name:  "nested type error and nested unknown key",
			block: map[string]any{"hard": map[string]any{"memory_available": "lots", "memory_availabel": "1Gi"}},
			errs: []string{
				`hard.memory_availabel: unknown key (did you mean "memory_available"?)`,
				`hard.memory_available: invalid quantity "lots": unexpected "l" at offset 0; expected ` + quantityGrammar,
			},
		},
		{
			name:  "unknown keys",
			block: map[string]any{"colour": "red", "Ignored": "x", "hidden": "x", "Name": "x"},
			errs: []string{
				`Ignored: unknown key; expected one of count, devices, enabled, extra, hard, level, limits, name, period, ratio, size, soft, tags, verbose`,
				`Name: unknown key (did you mean "name"?)`,
				`colour: unknown key; expected one of count, devices, enabled, extra, hard, level, limits, name, period, ratio, size, soft, tags, verbose`,
				`hidden: unknown key; expected one of count, devices, enabled, extra, hard, level, limits, name, period, ratio, size, soft, tags, verbose`,
			},
		},
		{
			name: "type errors, all of them",
			block: map[string]any{
				"name": 5.0, "count": "x", "size": -1.0, "ratio": "half", "enabled": "yes",
				"hard": "x", "tags": "a", "limits": []any{"x"}, "level": 5.0,
			},
			errs: []string{
				`count: expected a whole number, got "x"`,
				`enabled: expected true or false, got "yes"`,
				`hard: expected a block of keys and values, got "x"`,
				`level: expected a string, got 5`,
				`limits: expected a block of keys and values, got a list`,
				`name: expected a string, got 5`,
				`ratio: expected a number, got "half"`,
				`size: expected a whole number from 0 to 65535, got -1`,
				`tags: expected a list, got "a"`,
			},
		},
		{
			name:  "numbers out of range",
			block: map[string]any{"count": 300.0, "size": 1.5, "ratio": 1e300},
			errs: []string{
				`count: expected a whole number from -128 to 127, got 300`,
				`ratio: expected a number that fits float32, got 1e+300`,
				`size: expected a whole number, got 1.5`,
			},
		},
		{
			name: "paths into lists and maps",
			block: map[string]any{
				"tags":    []any{"b", 1.0},
				"devices": []any{map[string]any{"path": "/dev/a"}, map[string]any{"path": true, "mod": "r"}},
				"limits":  map[string]any{"memory.available": "x", "cpu": []any{}},
			},
			errs: []string{
				`devices[1].mod: unknown key (did you mean "mode"?)`,
				`devices[1].path: expected a string, got true`,
				`limits.cpu: expected a quantity such as "100Mi", got []`,
				`limits["memory.available"]: invalid quantity "x": unexpected "x" at offset 0; expected ` + quantityGrammar,
				`tags[1]: expected a string, got 1`,
			},
		},
		{
			name:  "errors of a field's own unmarshaler name the field",
			block: map[string]any{"period": "soon", "level": "loud", "soft": map[string]any{"memory_available": true}},
			errs: []string{
				`level: expected low or high, got "loud"`,
				`period: expected a duration such as "30s", got "soon"`,
				`soft.memory_available: expected a quantity such as "100Mi", got true`,
			},
		},
		{
			name:  "several blocks where one is expected",
			block: map[string]any{"hard": []any{map[string]any{}, map[string]any{}}},
			errs:  []string{`hard: expected one block, got 2`},
		},
		{
			name:  "Validate returning joined config errors",
			block: map[string]any{"name": "joined"},
			errs:  []string{`name: must not be joined`, `count: odd`, `the block as a whole`},
		},
		{
			name:  "Validate returning a plain error",
			block: map[string]any{"name": "plain"},
			errs:  []string{`name and count disagree`},
		},
		{
			name:  "Validate does not run on a block that did not decode",
			block: map[string]any{"name": "joined", "count": "x"},
			errs:  []string{`count: expected a whole number, got "x"`},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var block *structpb.Struct
			if c.block != nil {
				var err error
				if block, err = structpb.NewStruct(c.block); err != nil {
					t.Fatal(err)
				}
			}
			cfg, errs := decodeConfig[testConfig](block)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, c.errs) {
				t.Fatalf("errors:\n got %q\nwant %q", got, c.errs)
			}
			if c.errs != nil {
				if cfg != nil {
					t.Errorf("decodeConfig returned a config with its errors")
				}
				return
			}
			out, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != c.want {
				t.Errorf("decoded:\n got %s\nwant %s", out, c.want)
			}
		})
	}
}

type embeddedPointer struct{ *common }

// duplicateKeys has two fields with the key "x", which encoding/json
// would silently drop. It is built at run time: vet refuses it in source.
var duplicateKeys = reflect.StructOf([]reflect.StructField{
	{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
	{Name: "B", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
})

type deepDuration struct {
	Probes []struct {
		Timeout time.Duration `json:"timeout"`
	} `json:"probes"`
}

type recursive struct {
	Children []recursive `json:"children"`
	Name     string      `json:"name"`
}

func TestCheckConfigType(t *testing.T) {
	for _, c := range []struct {
		typ  reflect.Type
		want string // "" for a type a block decodes into
	}{
		{reflect.TypeFor[testConfig](), ""},
		{reflect.TypeFor[struct{}](), ""},
		{reflect.TypeFor[map[string]Quantity](), ""},
		{reflect.TypeFor[recursive](), ""},
		{reflect.TypeFor[string](), "config type string: a config block is a block of keys and values; use a struct"},
		{reflect.TypeFor[struct {
			C chan int `json:"c"`
		}](), "key c: a config block cannot hold chan int"},
		{reflect.TypeFor[struct {
			M map[int]string `json:"m"`
		}](), "key m: map keys must be strings, not int"},
		{reflect.TypeFor[struct {
			A [2]string `json:"a"`
		}](), "key a: a config block cannot hold [2]string"},
		{reflect.TypeFor[struct {
			S fmt.Stringer `json:"s"`
		}](), "key s: a config block cannot hold fmt.Stringer"},
		{reflect.TypeFor[deepDuration](), "key probes[].timeout: time.Duration decodes from a number of nanoseconds; use sdk.Duration"},
		{reflect.TypeFor[embeddedPointer](), "embedded *sdk.common: embed the struct by value"},
		{duplicateKeys, `two fields have the key "x"`},
	} {
		err := checkConfigType(c.typ)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("checkConfigType(%v): %v", c.typ, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("checkConfigType(%v) = %v, want an error containing %q", c.typ, err, c.want)
		}
	}
}

func TestConfigErrorsOf(t *testing.T) {
	one := ConfigError{Path: "a", Message: "bad"}
	for _, c := range []struct {
		name string
		err  error
		want ConfigErrors
	}{
		{"ConfigErrors", ConfigErrors{one, {Message: "whole"}}, ConfigErrors{one, {Message: "whole"}}},
		{"ConfigError", one, ConfigErrors{one}},
		{"*ConfigError", &one, ConfigErrors{one}},
		{"joined", errors.Join(one, errors.New("plain")), ConfigErrors{one, {Message: "plain"}}},
		{"wrapped keeps its whole message", fmt.Errorf("limits: %w", one), ConfigErrors{{Message: "limits: a: bad"}}},
		{"plain", errors.New("plain"), ConfigErrors{{Message: "plain"}}},
	} {
		if got := configErrorsOf(c.err); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: configErrorsOf = %#v, want %#v", c.name, got, c.want)
		}
	}
}
