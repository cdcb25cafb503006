package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// pluginKey is the top-level key of plugin "<kind>" "<name>" blocks.
const pluginKey = "plugin"

// field is one key of a schema.
type field struct {
	key   string // dotted, relative to the schema's root
	index []int  // reflect field index path
	kind  *valueKind
}

// schema lists the keys of a struct, read from its config tags.
type schema struct {
	fields []field // in struct order
	byKey  map[string]*field
	// groups are the keys of nested blocks ("plugin_host").
	groups map[string]bool
	// extra are keys handled outside the schema (the plugin blocks).
	extra []string
}

var (
	agentSchema  = newSchema(reflect.TypeFor[Config](), pluginKey)
	pluginSchema = newSchema(reflect.TypeFor[Plugin]())
)

func newSchema(t reflect.Type, extra ...string) *schema {
	s := &schema{byKey: map[string]*field{}, groups: map[string]bool{}, extra: extra}
	s.add(t, "", nil)
	for i := range s.fields {
		s.byKey[s.fields[i].key] = &s.fields[i]
	}
	return s
}

func (s *schema) add(t reflect.Type, prefix string, index []int) {
	for i := range t.NumField() {
		sf := t.Field(i)
		name := sf.Tag.Get("config")
		if name == "" || name == "-" {
			continue
		}
		key := joinKey(prefix, name)
		idx := append(append([]int(nil), index...), i)
		if sf.Type.Kind() == reflect.Struct {
			s.groups[key] = true
			s.add(sf.Type, key, idx)
			continue
		}
		kind, ok := valueKinds[sf.Type]
		if !ok {
			panic(fmt.Sprintf("config: key %s has type %s, which has no valueKind", key, sf.Type))
		}
		s.fields = append(s.fields, field{key: key, index: idx, kind: kind})
	}
}

// children lists the names directly below parent ("" is the top level).
func (s *schema) children(parent string) []string {
	var names []string
	seen := map[string]bool{}
	addChild := func(key string) {
		rest := key
		if parent != "" {
			var ok bool
			if rest, ok = strings.CutPrefix(key, parent+"."); !ok {
				return
			}
		}
		name, _, _ := strings.Cut(rest, ".")
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	for _, f := range s.fields {
		addChild(f.key)
	}
	for g := range s.groups {
		addChild(g)
	}
	if parent == "" {
		for _, e := range s.extra {
			addChild(e)
		}
	}
	slices.Sort(names)
	return names
}

// tree renders a struct's keys as a nested map in the file form.
func (s *schema) tree(v reflect.Value) map[string]any {
	out := map[string]any{}
	for _, f := range s.fields {
		setPath(out, f.key, f.kind.toValue(v.FieldByIndex(f.index)))
	}
	return out
}

// decode sets the struct's fields from a checked tree in the file form.
func (s *schema) decode(tree map[string]any, dst reflect.Value) {
	for _, f := range s.fields {
		v, ok := getPath(tree, f.key)
		if !ok {
			continue
		}
		rv, got := f.kind.fromValue(v)
		if got != "" {
			// Every source is checked before koanf merges it, so this is a bug.
			panic(fmt.Sprintf("config: %s passed checking but does not decode: got %s", f.key, got))
		}
		dst.FieldByIndex(f.index).Set(rv)
	}
}

func joinKey(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// getPath and setPath walk a nested map along a dotted schema key; schema
// keys never contain dots within a name.
func getPath(tree map[string]any, key string) (any, bool) {
	parent, name := splitParent(key)
	m := tree
	if parent != "" {
		sub, ok := getPath(tree, parent)
		if !ok {
			return nil, false
		}
		if m, ok = sub.(map[string]any); !ok {
			return nil, false
		}
	}
	v, ok := m[name]
	return v, ok
}

func setPath(tree map[string]any, key string, v any) {
	m := tree
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		sub, ok := m[p].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[p] = sub
		}
		m = sub
	}
	m[parts[len(parts)-1]] = v
}

func splitParent(key string) (parent, name string) {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}
