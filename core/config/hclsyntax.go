package config

import (
	"fmt"

	"github.com/hashicorp/hcl/hcl/scanner"
	"github.com/hashicorp/hcl/hcl/token"
)

// syntaxHint finds where a file's syntax error most likely is. HCL v1's
// parser reports where it noticed the mistake, which is often lines later:
// a missing value is noticed at the next key, an unclosed block at the end
// of the file. One pass over the tokens finds the usual mistakes on their
// own line: "=" without a value, keys on one line without "=" or "{" (the
// next line's key is read as one more label), a "{" never closed. ok is
// false when none lies on a line before the one the parser names, whose
// message then stands.
func syntaxHint(src []byte, noticed token.Pos) (pos token.Pos, hint string, ok bool) {
	s := scanner.New(src)
	s.Error = func(token.Pos, string) {} // the parser reports scanning errors
	var prev, firstKey token.Token
	var open []token.Token // the "{" and "[" not yet closed
	inList := func() bool { return len(open) > 0 && open[len(open)-1].Type == token.LBRACK }
	atKey := true // an IDENT or STRING here is a key (or a block label)
	// found keeps the parser's message when it already names the line.
	found := func(at token.Pos, hint string) (token.Pos, string, bool) {
		if at.Line >= noticed.Line {
			return token.Pos{}, "", false
		}
		return at, hint, true
	}
	for tok := s.Scan(); ; tok = s.Scan() {
		if tok.Type == token.COMMENT {
			continue
		}
		// Every rule below names a token before tok: before the line the
		// parser names, or its message stands.
		if prev.Type == token.ASSIGN && !startsValue(tok.Type) {
			return found(prev.Pos, `expected a value after "="`)
		}
		isKey := atKey && (tok.Type == token.IDENT || tok.Type == token.STRING)
		if isKey && firstKey.Type != token.ILLEGAL && firstKey.Pos.Line < tok.Pos.Line {
			return found(firstKey.Pos, fmt.Sprintf(`expected "=" or "{" after %s`, firstKey.Text))
		}
		if closes := closing(tok.Type); closes != token.ILLEGAL && len(open) > 0 && open[len(open)-1].Type != closes {
			unclosed := open[len(open)-1]
			return found(unclosed.Pos, fmt.Sprintf("this %q is never closed", unclosed.Text))
		}
		if tok.Type != token.EOF && tok.Pos.Line >= noticed.Line {
			return token.Pos{}, "", false
		}
		switch {
		case tok.Type == token.EOF:
			for i := len(open) - 1; i >= 0; i-- {
				if open[i].Type == token.LBRACE {
					return found(open[i].Pos, `this "{" is never closed`)
				}
			}
			return token.Pos{}, "", false
		case isKey:
			if firstKey.Type == token.ILLEGAL {
				firstKey = tok
			}
		case tok.Type == token.LBRACE, tok.Type == token.LBRACK:
			open = append(open, tok)
			atKey = tok.Type == token.LBRACE
		case tok.Type == token.RBRACE, tok.Type == token.RBRACK:
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
			atKey = !inList()
		case tok.Type == token.ASSIGN:
			atKey = false
		default: // a value or "," ends an item, unless a list goes on
			atKey = !inList()
		}
		if !isKey {
			firstKey = token.Token{}
		}
		prev = tok
	}
}

// closing is the opening token that tok closes; ILLEGAL if none.
func closing(t token.Type) token.Type {
	switch t {
	case token.RBRACE:
		return token.LBRACE
	case token.RBRACK:
		return token.LBRACK
	}
	return token.ILLEGAL
}

// startsValue says whether a token may follow "=".
func startsValue(t token.Type) bool {
	switch t {
	case token.NUMBER, token.FLOAT, token.BOOL, token.STRING, token.HEREDOC, token.LBRACK, token.LBRACE, token.SUB:
		return true
	}
	return false
}
