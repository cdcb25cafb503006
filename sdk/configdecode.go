package sdk

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// configDecoder decodes a config block, as google.protobuf.Struct holds it
// (map[string]any, []any, string, float64, bool, nil), into a Go value by
// reflection. It follows encoding/json's rules (json tags, embedded structs,
// a field's own UnmarshalJSON or UnmarshalText) with three differences made
// for operators: keys match exactly, not case-insensitively; every problem
// is collected, not just the first; and each names its key path, including
// errors from a field's own UnmarshalJSON, which encoding/json reports
// without one.
//
// HCL, which operators write, decodes a block written once as a list of one
// object, and some decoders flatten a list of one object into the object;
// both shapes are accepted wherever a block or a list of blocks is expected.
type configDecoder struct {
	errs ConfigErrors
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	durationType        = reflect.TypeFor[time.Duration]()
)

func (d *configDecoder) fail(path, format string, args ...any) {
	d.errs = append(d.errs, ConfigError{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (d *configDecoder) expected(path, what string, got any) {
	d.fail(path, "expected %s, got %s", what, describeValue(got))
}

// decode stores in into out, which must be addressable. A null leaves out
// as it is (its default).
func (d *configDecoder) decode(path string, in any, out reflect.Value) {
	if in == nil {
		return
	}
	if reflect.PointerTo(out.Type()).Implements(jsonUnmarshalerType) {
		raw, err := json.Marshal(in)
		if err == nil {
			err = out.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(raw)
		}
		if err != nil {
			d.fail(path, "%s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return
	}
	if reflect.PointerTo(out.Type()).Implements(textUnmarshalerType) {
		s, ok := in.(string)
		if !ok {
			d.expected(path, "a string", in)
			return
		}
		if err := out.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			d.fail(path, "%s", err.Error())
		}
		return
	}
	switch out.Kind() {
	case reflect.Pointer:
		if out.IsNil() {
			out.Set(reflect.New(out.Type().Elem()))
		}
		d.decode(path, in, out.Elem())
	case reflect.Interface:
		out.Set(reflect.ValueOf(in))
	case reflect.Struct:
		if block, ok := d.block(path, in); ok {
			d.decodeStruct(path, block, out)
		}
	case reflect.Map:
		if block, ok := d.block(path, in); ok {
			d.decodeMap(path, block, out)
		}
	case reflect.Slice:
		d.decodeList(path, in, out)
	case reflect.String:
		if s, ok := in.(string); ok {
			out.SetString(s)
		} else {
			d.expected(path, "a string", in)
		}
	case reflect.Bool:
		if b, ok := in.(bool); ok {
			out.SetBool(b)
		} else {
			d.expected(path, "true or false", in)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		d.decodeInt(path, in, out)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		d.decodeUint(path, in, out)
	case reflect.Float32, reflect.Float64:
		f, ok := in.(float64)
		switch {
		case !ok:
			d.expected(path, "a number", in)
		case out.OverflowFloat(f):
			d.expected(path, "a number that fits "+out.Type().String(), in)
		default:
			out.SetFloat(f)
		}
	default:
		// checkConfigType refused such types when the plugin started.
		d.fail(path, "the plugin's config type cannot hold a value here (%s)", out.Type())
	}
}

// block returns in as a block of keys and values.
func (d *configDecoder) block(path string, in any) (map[string]any, bool) {
	switch v := in.(type) {
	case map[string]any:
		return v, true
	case []any:
		if blocks := len(v); blocks > 0 && allBlocks(v) {
			if blocks == 1 {
				return v[0].(map[string]any), true
			}
			d.fail(path, "expected one block, got %d", blocks)
			return nil, false
		}
	}
	d.expected(path, "a block of keys and values", in)
	return nil, false
}

func allBlocks(list []any) bool {
	for _, item := range list {
		if _, ok := item.(map[string]any); !ok {
			return false
		}
	}
	return true
}

func (d *configDecoder) decodeStruct(path string, block map[string]any, out reflect.Value) {
	fields, _ := configFields(out.Type())
	byKey := make(map[string]configField, len(fields))
	for _, f := range fields {
		byKey[f.key] = f
	}
	for _, key := range sortedKeys(block) {
		f, ok := byKey[key]
		if !ok {
			d.fail(joinKey(path, key), "%s", unknownKeyMessage(key, fields))
			continue
		}
		d.decode(joinKey(path, key), block[key], out.FieldByIndex(f.index))
	}
}

func (d *configDecoder) decodeMap(path string, block map[string]any, out reflect.Value) {
	if out.IsNil() {
		out.Set(reflect.MakeMapWithSize(out.Type(), len(block)))
	}
	for _, key := range sortedKeys(block) {
		elem := reflect.New(out.Type().Elem()).Elem()
		d.decode(mapKeyPath(path, key), block[key], elem)
		out.SetMapIndex(reflect.ValueOf(key).Convert(out.Type().Key()), elem)
	}
}

func (d *configDecoder) decodeList(path string, in any, out reflect.Value) {
	list, ok := in.([]any)
	if !ok {
		if _, isBlock := in.(map[string]any); isBlock && holdsBlocks(out.Type().Elem()) {
			list = []any{in} // one block where a list of blocks is expected
		} else {
			d.expected(path, "a list", in)
			return
		}
	}
	s := reflect.MakeSlice(out.Type(), len(list), len(list))
	for i, item := range list {
		d.decode(path+"["+strconv.Itoa(i)+"]", item, s.Index(i))
	}
	out.Set(s)
}

// holdsBlocks reports whether a value of type t is written as a block.
func holdsBlocks(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return (t.Kind() == reflect.Struct || t.Kind() == reflect.Map) && !reflect.PointerTo(t).Implements(jsonUnmarshalerType)
}

func (d *configDecoder) decodeInt(path string, in any, out reflect.Value) {
	f, ok := in.(float64)
	if !ok || f != math.Trunc(f) {
		d.expected(path, "a whole number", in)
		return
	}
	bits := out.Type().Bits()
	lo, hi := int64(-1)<<(bits-1), int64(1)<<(bits-1)-1
	// float64(hi) rounds up to 2^63 for int64, hence >=.
	if f < float64(lo) || f >= float64(hi)+1 || out.OverflowInt(int64(f)) {
		d.expected(path, fmt.Sprintf("a whole number from %d to %d", lo, hi), in)
		return
	}
	out.SetInt(int64(f))
}

func (d *configDecoder) decodeUint(path string, in any, out reflect.Value) {
	f, ok := in.(float64)
	if !ok || f != math.Trunc(f) {
		d.expected(path, "a whole number", in)
		return
	}
	hi := uint64(1)<<out.Type().Bits() - 1
	if f < 0 || f >= float64(hi)+1 || out.OverflowUint(uint64(f)) {
		d.expected(path, fmt.Sprintf("a whole number from 0 to %d", hi), in)
		return
	}
	out.SetUint(uint64(f))
}

// describeValue shows a config value the way the operator wrote it.
func describeValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case []any:
		return "a list"
	case map[string]any:
		return "a block"
	}
	return fmt.Sprint(v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// joinKey appends a struct field's key to a path.
func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// mapKeyPath appends a map key to a path, quoted when it could be misread
// as more than one key ("thresholds[\"memory.available\"]").
func mapKeyPath(path, key string) string {
	if key != "" && strings.IndexFunc(key, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0 {
		return joinKey(path, key)
	}
	return path + "[" + strconv.Quote(key) + "]"
}

// unknownKeyMessage says a key is unknown and what was expected instead.
func unknownKeyMessage(key string, fields []configField) string {
	if len(fields) == 0 {
		return "unknown key; this block takes no keys"
	}
	best, bestDistance := "", 3 // suggest only close matches
	for _, f := range fields {
		if d := editDistance(strings.ToLower(key), strings.ToLower(f.key)); d < bestDistance {
			best, bestDistance = f.key, d
		}
	}
	if best != "" {
		return fmt.Sprintf("unknown key (did you mean %q?)", best)
	}
	known := make([]string, len(fields))
	for i, f := range fields {
		known[i] = f.key
	}
	sort.Strings(known)
	return "unknown key; expected one of " + strings.Join(known, ", ")
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// configField is one key of a config struct.
type configField struct {
	key   string
	index []int
	typ   reflect.Type
}

// configFields lists the keys of struct type t as encoding/json would: the
// json tag's name or the field's name, exported fields only, "-" skipped,
// and the fields of embedded structs promoted unless a shallower field has
// the same key. problems lists what json would silently drop or guess at:
// two fields with one key at the same depth, an embedded struct pointer.
func configFields(t reflect.Type) (fields []configField, problems []string) {
	type embedded struct {
		t     reflect.Type
		index []int
	}
	taken := map[string]bool{}
	level := []embedded{{t, nil}}
	for len(level) > 0 {
		var next []embedded
		atThisDepth := map[string]bool{}
		for _, e := range level {
			for i := range e.t.NumField() {
				f := e.t.Field(i)
				index := append(slices.Clone(e.index), i)
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name == "-" {
					continue
				}
				if f.Anonymous && name == "" {
					switch {
					case f.Type.Kind() == reflect.Struct:
						next = append(next, embedded{f.Type, index})
						continue
					case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
						problems = append(problems, fmt.Sprintf("embedded %s: embed the struct by value", f.Type))
						continue
					}
				}
				if !f.IsExported() {
					continue
				}
				if name == "" {
					name = f.Name
				}
				if taken[name] {
					continue // a shallower field has this key
				}
				if atThisDepth[name] {
					problems = append(problems, fmt.Sprintf("two fields have the key %q", name))
					continue
				}
				atThisDepth[name] = true
				fields = append(fields, configField{key: name, index: index, typ: f.Type})
			}
		}
		for name := range atThisDepth {
			taken[name] = true
		}
		level = next
	}
	return fields, problems
}

// checkConfigType reports what in a plugin's config type a config block
// could not be decoded into, so that the plugin's author learns it when the
// plugin starts rather than when an operator first sets that key.
func checkConfigType(t reflect.Type) error {
	switch {
	case t.Kind() == reflect.Struct, t.Kind() == reflect.Map,
		t.Kind() == reflect.Interface && t.NumMethod() == 0:
	default:
		return fmt.Errorf("config type %s: a config block is a block of keys and values; use a struct", t)
	}
	if err := checkDecodable(t, "", map[reflect.Type]bool{}); err != nil {
		return fmt.Errorf("config type %s: %w", t, err)
	}
	return nil
}

func checkDecodable(t reflect.Type, path string, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	where := ""
	if path != "" {
		where = "key " + path + ": "
	}
	if t == durationType {
		return fmt.Errorf("%stime.Duration decodes from a number of nanoseconds; use sdk.Duration, written \"30s\"", where)
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return nil
	case reflect.Pointer:
		return checkDecodable(t.Elem(), path, seen)
	case reflect.Slice:
		return checkDecodable(t.Elem(), path+"[]", seen)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("%smap keys must be strings, not %s", where, t.Key())
		}
		return checkDecodable(t.Elem(), path+"[]", seen)
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return nil
		}
	case reflect.Struct:
		fields, problems := configFields(t)
		if len(problems) > 0 {
			return fmt.Errorf("%s%s", where, strings.Join(problems, "; "))
		}
		for _, f := range fields {
			if err := checkDecodable(f.typ, joinKey(path, f.key), seen); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%sa config block cannot hold %s", where, t)
}
