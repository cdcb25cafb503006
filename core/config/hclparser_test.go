package config

import (
	"reflect"
	"testing"
)

func TestHCLParser(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		want     map[string]any
		wantErrs []string
	}{
		{
			name: "literals",
			src:  "s = \"a\\tb\"\nn = 42\nf = 1.5\nb = true\nh = <<EOT\nline\nEOT\n",
			want: map[string]any{"s": "a\tb", "n": int64(42), "f": 1.5, "b": true, "h": "line\n"},
		},
		{
			name: "labels nest as keys and several labelled blocks merge",
			src:  "plugin \"devices\" \"a\" { x = 1 }\nplugin \"devices\" \"b\" {}\nplugin \"stats\" \"c\" {}\n",
			want: map[string]any{"plugin": map[string]any{
				"devices": map[string]any{"a": map[string]any{"x": int64(1)}, "b": map[string]any{}},
				"stats":   map[string]any{"c": map[string]any{}},
			}},
		},
		{
			name: "a repeated block is a list of blocks; one block is a block",
			src:  "rule { a = 1 }\nrule { a = 2 }\nrule { a = 3 }\nsingle { a = 1 }\none_element = [{ a = 1 }]\n",
			want: map[string]any{
				"rule":        []any{map[string]any{"a": int64(1)}, map[string]any{"a": int64(2)}, map[string]any{"a": int64(3)}},
				"single":      map[string]any{"a": int64(1)},
				"one_element": []any{map[string]any{"a": int64(1)}},
			},
		},
		{
			name: "quoted keys stay whole, dots and case included",
			src:  "\"memory.available\" = \"100Mi\"\nMixedCase = { \"a.b\" = { \"C.d\" = true } }\n",
			want: map[string]any{
				"memory.available": "100Mi",
				"MixedCase":        map[string]any{"a.b": map[string]any{"C.d": true}},
			},
		},
		{
			name: "a name used two ways is refused and the first use kept",
			src:  "a = 1\na { x = 1 }\nb { x = 1 }\nb = 2\nc \"l\" {}\nc {}\n",
			want: map[string]any{"a": int64(1), "b": map[string]any{"x": int64(1)}, "c": map[string]any{"l": map[string]any{}}},
			wantErrs: []string{
				"f.hcl:2: a: set more than once in this file (first at line 1)",
				"f.hcl:4: b: set more than once in this file (first at line 3)",
				"f.hcl:6: c: set more than once in this file (first at line 5)",
			},
		},
		{
			name: "numbers beyond 64 bits are refused, not truncated",
			src:  "big = 99999999999999999999\nlist = [1,\n  1e999]\nok = 1\n",
			want: map[string]any{"ok": int64(1)},
			wantErrs: []string{
				"f.hcl:1: big: number 99999999999999999999 does not fit in 64 bits",
				"f.hcl:3: list: number 1e999 is out of range",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newHCLParser("f.hcl")
			got, err := p.Unmarshal([]byte(tt.src))
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Unmarshal =\n%#v\nwant\n%#v", got, tt.want)
			}
			var errs []string
			for _, e := range p.errs {
				errs = append(errs, e.Error())
			}
			if !reflect.DeepEqual(errs, tt.wantErrs) {
				t.Errorf("errors = %q, want %q", errs, tt.wantErrs)
			}
		})
	}
}

func TestHCLParserPositions(t *testing.T) {
	p := newHCLParser("f.hcl")
	_, err := p.Unmarshal([]byte(`a = 1
blk "x" {
  b = [
    { inner = 1 },
  ]
  rule { c = 1 }
  rule { c = 2
         d = 3 }
}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"a": 1, "blk": 2, "blk.x": 2, "blk.x.b": 3,
		// A repeated block: each key where it first appears.
		"blk.x.rule": 6, "blk.x.rule.c": 6, "blk.x.rule.d": 8,
	}
	got := map[string]int{}
	for k, pos := range p.positions {
		if pos.File != "f.hcl" {
			t.Errorf("position of %s in file %q", k, pos.File)
		}
		got[k] = pos.Line
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("positions = %v, want %v (values inside lists have none of their own)", got, want)
	}
}

func TestHCLParserSyntaxError(t *testing.T) {
	_, err := newHCLParser("/etc/microlet/conf.d/10-x.hcl").Unmarshal([]byte("a = 1\nb = \"unterminated\n"))
	const want = "/etc/microlet/conf.d/10-x.hcl:2:18: syntax error: literal not terminated"
	if err == nil || err.Error() != want {
		t.Errorf("Unmarshal error = %v, want %s", err, want)
	}
}
