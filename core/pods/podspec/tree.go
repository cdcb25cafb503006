package podspec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/sets"
)

// docNode is the shape of a manifest with the line each field starts on.
// The codec that decodes Pods reports errors by field path; this tree turns
// those paths back into lines an operator can jump to.
type docNode struct {
	// line is where the field starts: its key's line inside a mapping, the
	// item's own line inside a sequence.
	line   int
	kind   yaml.Kind
	tag    string
	value  string
	fields map[string]*docNode
	// keys are the mapping's keys in document order.
	keys  []string
	items []*docNode
}

// yamlLineRE matches the position go-yaml puts in its syntax errors.
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseTree reads data (YAML or JSON) as exactly one document. Syntax errors
// come back as a Problem with the line YAML names.
func parseTree(data []byte) (*docNode, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root *docNode
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, problemError(syntaxProblem(err))
		}
		if len(doc.Content) == 0 {
			continue // an empty document, e.g. after a trailing "---"
		}
		if root != nil {
			return nil, problemError(Problem{
				Line:   doc.Content[0].Line,
				Detail: "a second YAML document; a manifest holds exactly one object",
			})
		}
		root = buildTree(doc.Content[0], doc.Content[0].Line)
	}
	if root == nil {
		return nil, problemError(Problem{Detail: "the manifest is empty"})
	}
	return root, nil
}

// yamlParserProblems are the problems go-yaml's parser (as opposed to its
// scanner) reports. The parser numbers lines from 0 in its messages, the
// scanner from 1 (yaml.v3 decode.go, parser.fail).
var yamlParserProblems = sets.New(
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
)

// syntaxProblem turns a go-yaml syntax error into a problem on the right
// line. go-yaml leaves the line out when it is the first.
func syntaxProblem(err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if yamlParserProblems.Has(msg) {
			line++
		}
	}
	return Problem{Line: line, Detail: "invalid YAML: " + msg}
}

// buildTree mirrors n. Aliases stay leaves: following them would let a
// self-referencing or exponentially aliased manifest exhaust memory (the
// codec limits alias expansion itself).
func buildTree(n *yaml.Node, line int) *docNode {
	d := &docNode{line: line, kind: n.Kind, tag: n.ShortTag(), value: n.Value}
	switch n.Kind {
	case yaml.MappingNode:
		d.fields = make(map[string]*docNode, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i]
			if _, dup := d.fields[key.Value]; !dup { // the codec reports duplicates; the first is the one to point at
				d.fields[key.Value] = buildTree(n.Content[i+1], key.Line)
				d.keys = append(d.keys, key.Value)
			}
		}
	case yaml.SequenceNode:
		d.items = make([]*docNode, len(n.Content))
		for i, item := range n.Content {
			d.items[i] = buildTree(item, item.Line)
		}
	}
	return d
}

// child returns the field or item that segment names, or nil.
func (d *docNode) child(segment string) *docNode {
	switch d.kind {
	case yaml.MappingNode:
		return d.fields[segment]
	case yaml.SequenceNode:
		i, err := strconv.Atoi(segment)
		if err != nil || i < 0 || i >= len(d.items) {
			return nil
		}
		return d.items[i]
	}
	return nil
}

// lineOf returns the line of the field at path ("spec.containers[0].image",
// "metadata.annotations[example.com/key]"). A field that is absent (what a
// "Required value" is about) is reported at its nearest present ancestor.
func (d *docNode) lineOf(path string) int {
	n := d
	for _, segment := range splitFieldPath(path) {
		next := n.child(segment)
		if next == nil {
			break
		}
		n = next
	}
	return n.line
}

// scalar returns the scalar value at path, if there is one.
func (d *docNode) scalar(path string) (string, bool) {
	n := d
	for _, segment := range splitFieldPath(path) {
		if n = n.child(segment); n == nil {
			return "", false
		}
	}
	return n.value, n.kind == yaml.ScalarNode
}

// splitFieldPath splits a field path in Kubernetes notation into its
// segments: names, list indices and map keys alike.
func splitFieldPath(path string) []string {
	var segments []string
	for path != "" {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return append(segments, path[1:])
			}
			segments = append(segments, path[1:end])
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			segments = append(segments, path[:end])
			path = path[end:]
		}
	}
	return segments
}

// findTyped locates a value the JSON decoder rejected. The decoder names the
// field without list indices ("spec.containers.ports.containerPort") and the
// JSON type it found ("string"); the first value at that field whose YAML type
// is that JSON type is the culprit. It returns the value's full path with
// indices and its node.
func (d *docNode) findTyped(segments []string, jsonType string) (string, *docNode) {
	return d.findTypedFrom("", segments, jsonType)
}

func (d *docNode) findTypedFrom(prefix string, segments []string, jsonType string) (string, *docNode) {
	if len(segments) == 0 && d.hasJSONType(jsonType) {
		return prefix, d
	}
	switch d.kind {
	case yaml.SequenceNode: // the decoder's path skips list indices
		for i, item := range d.items {
			if p, n := item.findTypedFrom(fmt.Sprintf("%s[%d]", prefix, i), segments, jsonType); n != nil {
				return p, n
			}
		}
	case yaml.MappingNode:
		if len(segments) == 0 { // a map field (labels, resource lists): the decoder names the map, not the entry
			for _, key := range d.keys {
				if value := d.fields[key]; value.hasJSONType(jsonType) {
					return fmt.Sprintf("%s[%s]", prefix, key), value
				}
			}
			return "", nil
		}
		if next := d.fields[segments[0]]; next != nil {
			p := segments[0]
			if prefix != "" {
				p = prefix + "." + p
			}
			return next.findTypedFrom(p, segments[1:], jsonType)
		}
	}
	return "", nil
}

// hasJSONType reports whether the node is what encoding/json calls jsonType
// in an UnmarshalTypeError.
func (d *docNode) hasJSONType(jsonType string) bool {
	switch jsonType {
	case "object":
		return d.kind == yaml.MappingNode
	case "array":
		return d.kind == yaml.SequenceNode
	case "string":
		return d.kind == yaml.ScalarNode && (d.tag == "!!str" || d.tag == "!!timestamp")
	case "number":
		return d.kind == yaml.ScalarNode && (d.tag == "!!int" || d.tag == "!!float")
	case "bool":
		return d.kind == yaml.ScalarNode && d.tag == "!!bool"
	}
	return false
}

// walkScalars calls fn for every scalar in the tree with its full path, in
// document order, until fn returns true.
func (d *docNode) walkScalars(prefix string, fn func(path string, n *docNode) bool) bool {
	switch d.kind {
	case yaml.ScalarNode:
		return fn(prefix, d)
	case yaml.SequenceNode:
		for i, item := range d.items {
			if item.walkScalars(fmt.Sprintf("%s[%d]", prefix, i), fn) {
				return true
			}
		}
	case yaml.MappingNode:
		for _, key := range d.keys {
			p := key
			if prefix != "" {
				p = prefix + "." + key
			}
			if d.fields[key].walkScalars(p, fn) {
				return true
			}
		}
	}
	return false
}
