package config

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/hashicorp/hcl/hcl/ast"
	hclparser "github.com/hashicorp/hcl/hcl/parser"
	hclstrconv "github.com/hashicorp/hcl/hcl/strconv"
	"github.com/hashicorp/hcl/hcl/token"
)

// hclParser is the koanf.Parser for one HCL file. It yields a nested map:
//
//   - key = value sets the key; a value may be a string, number, bool, list or
//     { ... } object;
//   - key { ... } is a block, merged with koanf like an object;
//   - labels nest: plugin "eviction" "kubelet" { ... } is
//     plugin -> eviction -> kubelet -> { ... };
//   - a block repeated at the same place becomes a list of blocks;
//   - keys are kept verbatim, dots and case included.
//
// It records the line of every key as a dotted path (inside lists of blocks
// only the list's own key), and reports a key set twice in one file.
type hclParser struct {
	file      string
	positions map[string]Position
	// errs are problems that leave the rest of the file loadable.
	errs Errors
}

func newHCLParser(file string) *hclParser {
	return &hclParser{file: file, positions: map[string]Position{}}
}

// Unmarshal parses a whole file. A syntax error fails the file, since
// nothing after it can be trusted.
func (p *hclParser) Unmarshal(b []byte) (map[string]any, error) {
	f, err := hclparser.Parse(b)
	if err != nil {
		return nil, p.syntaxError(b, err)
	}
	// The HCL parser always returns a file's items as an object list.
	return p.object(f.Node.(*ast.ObjectList), "", true), nil
}

// Marshal is part of koanf.Parser; microlet never writes config files.
func (p *hclParser) Marshal(map[string]any) ([]byte, error) {
	return nil, errors.New("config: writing HCL is not supported")
}

// syntaxError rewrites the HCL parser's "At 3:7: ..." as file:3:7, or
// names the line where the mistake most likely is (syntaxHint) and says
// where the parser noticed it.
func (p *hclParser) syntaxError(src []byte, err error) *Error {
	var pe *hclparser.PosError
	if !errors.As(err, &pe) {
		return &Error{Position: Position{File: p.file}, Message: "syntax error: " + err.Error()}
	}
	if pos, hint, ok := syntaxHint(src, pe.Pos); ok {
		return &Error{
			Position: Position{File: p.file, Line: pos.Line},
			Column:   pos.Column,
			Message:  fmt.Sprintf("syntax error: %s (noticed at %d:%d: %v)", hint, pe.Pos.Line, pe.Pos.Column, pe.Err),
		}
	}
	return &Error{
		Position: Position{File: p.file, Line: pe.Pos.Line},
		Column:   pe.Pos.Column,
		Message:  "syntax error: " + pe.Err.Error(),
	}
}

// object converts the items of one object or block body.
func (p *hclParser) object(list *ast.ObjectList, path string, record bool) map[string]any {
	b := &body{p: p, path: path, record: record, values: map[string]any{}, seen: map[string]*entry{}}
	for _, item := range list.Items {
		b.add(item, item.Keys)
	}
	return b.finish()
}

// value converts an attribute's value; false means it was reported as wrong.
func (p *hclParser) value(n ast.Node, key string, record bool) (any, bool) {
	switch n := n.(type) {
	case *ast.ListType:
		out := make([]any, 0, len(n.List))
		for _, e := range n.List {
			v, ok := p.value(e, key, false)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	case *ast.ObjectType:
		return p.object(n.List, key, record), true
	default:
		// The HCL parser yields only literals besides lists and objects.
		v, err := literal(n.(*ast.LiteralType).Token)
		if err != nil {
			p.errs = append(p.errs, &Error{Position: Position{File: p.file, Line: n.Pos().Line}, Key: key, Message: err.Error()})
			return nil, false
		}
		return v, true
	}
}

// literal is token.Value without its panics: the scanner accepts numbers
// that do not fit in 64 bits.
func literal(tok token.Token) (any, error) {
	switch tok.Type {
	case token.NUMBER:
		n, err := strconv.ParseInt(tok.Text, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("number %s does not fit in 64 bits", tok.Text)
		}
		return n, nil
	case token.FLOAT:
		f, err := strconv.ParseFloat(tok.Text, 64)
		if err != nil {
			return nil, fmt.Errorf("number %s is out of range", tok.Text)
		}
		return f, nil
	case token.STRING:
		s, err := hclstrconv.Unquote(tok.Text)
		if err != nil {
			return nil, fmt.Errorf("string %s: %v", tok.Text, err)
		}
		return s, nil
	default: // BOOL, HEREDOC and IDENT convert without failing
		return tok.Value(), nil
	}
}

// body collects the items of one object, remembering how each name was set.
type body struct {
	p      *hclParser
	path   string
	record bool
	values map[string]any
	seen   map[string]*entry
}

type entryKind int

const (
	attribute entryKind = iota // name = value
	block                      // name { ... }
	blocks                     // name { ... } more than once
	labelled                   // name "label" ... { ... }
)

type entry struct {
	kind   entryKind
	line   int
	labels *body // for labelled
}

// add adds one item; keys are the item's name and labels still to place.
func (b *body) add(item *ast.ObjectItem, keys []*ast.ObjectKey) {
	line := keys[0].Pos().Line
	v, err := literal(keys[0].Token)
	if err != nil {
		b.p.errs = append(b.p.errs, &Error{Position: Position{File: b.p.file, Line: line}, Key: b.path, Message: err.Error()})
		return
	}
	name := v.(string) // keys are identifiers or strings
	key := joinKey(b.path, name)
	e := b.seen[name]

	switch {
	case len(keys) > 1: // labels follow: they become nested names
		if e == nil {
			e = &entry{kind: labelled, line: line, labels: &body{
				p: b.p, path: key, record: b.record, values: map[string]any{}, seen: map[string]*entry{},
			}}
			b.seen[name] = e
			b.recordLine(key, line)
		} else if e.kind != labelled {
			b.setTwice(key, line, e.line)
			return
		}
		e.labels.add(item, keys[1:])

	case !item.Assign.IsValid(): // a block
		if e != nil && e.kind != block && e.kind != blocks {
			b.setTwice(key, line, e.line)
			return
		}
		value := b.p.object(item.Val.(*ast.ObjectType).List, key, b.record)
		switch {
		case e == nil:
			b.values[name] = value
			b.seen[name] = &entry{kind: block, line: line}
			b.recordLine(key, line)
		case e.kind == block:
			b.values[name] = []any{b.values[name], value}
			e.kind = blocks
		default:
			b.values[name] = append(b.values[name].([]any), value)
		}

	default: // name = value
		if e != nil {
			b.setTwice(key, line, e.line)
			return
		}
		b.seen[name] = &entry{kind: attribute, line: line}
		b.recordLine(key, line)
		if v, ok := b.p.value(item.Val, key, b.record); ok {
			b.values[name] = v
		}
	}
}

func (b *body) finish() map[string]any {
	for name, e := range b.seen {
		if e.kind == labelled {
			b.values[name] = e.labels.finish()
		}
	}
	return b.values
}

// recordLine keeps the first line a key appears on in this file.
func (b *body) recordLine(key string, line int) {
	if !b.record {
		return
	}
	if _, ok := b.p.positions[key]; !ok {
		b.p.positions[key] = Position{File: b.p.file, Line: line}
	}
}

func (b *body) setTwice(key string, line, first int) {
	b.p.errs = append(b.p.errs, &Error{
		Position: Position{File: b.p.file, Line: line},
		Key:      key,
		Message:  fmt.Sprintf("set more than once in this file (first at line %d)", first),
	})
}
