package config

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/microlet/microlet/sdk"
)

// layer is one configuration source as Load merges it.
type layer struct {
	// text is true for the environment and flags, whose values are text.
	text bool
	// positions says where this source set each dotted key.
	positions map[string]Position
	// spell names a key the way this source writes it, for suggestions.
	spell func(parent, name string) string
	// readErrs are problems found while reading the source.
	readErrs Errors
}

// quoteName spells a key as a config file writes it.
func quoteName(_, name string) string { return strconv.Quote(name) }

// positionOf finds where this source set key, or failing that the nearest
// key around it: a value inside a list has no line of its own, and an
// environment variable may name a key below a value.
func (l *layer) positionOf(key string) Position {
	if p, ok := l.positions[key]; ok {
		return p
	}
	for k := key; k != ""; {
		k, _ = splitParent(k)
		if p, ok := l.positions[k]; ok {
			return p
		}
	}
	for _, k := range sortedKeys(l.positions) {
		if strings.HasPrefix(k, key+".") {
			return l.positions[k]
		}
	}
	return Position{}
}

// check prunes what the source got wrong from tree, returning a reason for
// each removal, so that koanf merges only keys of the right type.
func (l *layer) check(tree map[string]any) Errors {
	c := checker{layer: l, errs: slices.Clone(l.readErrs)}
	c.object(tree, "", "", agentSchema)
	c.errs.sortByPosition()
	return c.errs
}

type checker struct {
	*layer
	errs Errors
}

func (c *checker) fail(key, format string, args ...any) {
	c.errs = append(c.errs, &Error{Position: c.positionOf(key), Key: key, Message: fmt.Sprintf(format, args...)})
}

// object checks tree, found at path, against the keys of s below rel.
func (c *checker) object(tree map[string]any, path, rel string, s *schema) {
	for _, name := range sortedKeys(tree) {
		if !c.entry(tree, name, path, rel, s) {
			delete(tree, name)
		}
	}
}

// entry checks tree[name], reporting whether any of it is left.
func (c *checker) entry(tree map[string]any, name, path, rel string, s *schema) bool {
	key, skey := joinKey(path, name), joinKey(rel, name)
	v := tree[name]
	if s == agentSchema && skey == pluginKey {
		return c.plugins(v, key)
	}
	if f := s.byKey[skey]; f != nil {
		converted, ok := c.leaf(key, f, v)
		if ok {
			tree[name] = converted
		}
		return ok
	}
	if s.groups[skey] {
		m, ok := v.(map[string]any)
		if !ok {
			c.fail(key, "expected a block, got %s", describe(v))
			return false
		}
		c.object(m, key, skey, s)
		return true
	}
	c.unknown(path, name, s.children(rel))
	return false
}

// leaf checks one value, turning text into the file form.
func (c *checker) leaf(key string, f *field, v any) (any, bool) {
	if c.text {
		if f.kind.fromText == nil {
			c.fail(key, "can only be set in a config file")
			return nil, false
		}
		s, ok := v.(string)
		if !ok {
			// The variable named a key below this one.
			for _, sub := range sortedKeys(v.(map[string]any)) {
				c.unknown(key, sub, nil)
			}
			return nil, false
		}
		if v, ok = f.kind.fromText(s); !ok {
			c.fail(key, "expected %s, got %q", f.kind.textExpectation(), s)
			return nil, false
		}
	}
	if _, got := f.kind.fromValue(v); got != "" {
		c.fail(key, "expected %s, got %s", f.kind.expected, got)
		return nil, false
	}
	return v, true
}

// unknown reports a name found at path that is none of candidates.
func (c *checker) unknown(path, name string, candidates []string) {
	msg := fmt.Sprintf("unknown key %q", name)
	if suggestion, ok := closest(name, candidates); ok {
		msg += fmt.Sprintf(" (did you mean %s?)", c.spell(path, suggestion))
	}
	c.errs = append(c.errs, &Error{Position: c.positionOf(joinKey(path, name)), Key: path, Message: msg})
}

// pluginName is what a plugin's kind and name may look like.
var pluginName = regexp.MustCompile(`^[a-z0-9-]+$`)

const pluginBlockForm = `plugin "<kind>" "<name>" { ... }`

// plugins checks the plugin blocks, plugin -> kind -> name -> block,
// reporting whether any are left.
func (c *checker) plugins(v any, key string) bool {
	kinds, ok := v.(map[string]any)
	if !ok {
		c.fail(key, "expected blocks of the form %s, got %s", pluginBlockForm, describe(v))
		return false
	}
	known := sdk.KnownKinds()
	for _, kind := range sortedKeys(kinds) {
		kindKey := joinKey(key, kind)
		names, ok := kinds[kind].(map[string]any)
		switch {
		case !slices.Contains(known, kind):
			msg := fmt.Sprintf("unknown plugin kind %q, expected one of %s", kind, strings.Join(known, ", "))
			if suggestion, ok := closest(kind, known); ok {
				msg += fmt.Sprintf(" (did you mean %q?)", suggestion)
			}
			c.fail(kindKey, "%s", msg)
		case !ok || len(names) == 0:
			c.fail(kindKey, "expected a block with two labels, %s", pluginBlockForm)
		default:
			for _, name := range sortedKeys(names) {
				if !c.plugin(names, name, joinKey(kindKey, name)) {
					delete(names, name)
				}
			}
			if len(names) > 0 {
				continue
			}
		}
		delete(kinds, kind)
	}
	return len(kinds) > 0
}

// plugin checks one plugin block, reporting whether any of it is left.
func (c *checker) plugin(names map[string]any, name, key string) bool {
	if !pluginName.MatchString(name) {
		c.fail(key, "plugin name %q: expected lowercase letters, digits and '-'", name)
		return false
	}
	switch b := names[name].(type) {
	case map[string]any:
		c.object(b, key, "", pluginSchema)
		return true
	case []any:
		c.fail(key, "plugin block declared more than once in this file")
	default:
		c.fail(key, "expected a block with two labels, %s", pluginBlockForm)
	}
	return false
}
