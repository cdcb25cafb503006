package podspec

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Problem is one thing wrong with a manifest, located in it where possible.
type Problem struct {
	// Line is the 1-based line of the manifest the problem is on, or 0 when
	// it cannot be told.
	Line int
	// Field is the path of the offending field in the document, in
	// Kubernetes notation ("spec.containers[0].image"; "items[1]...." in a
	// PodList). Empty when the problem is not about one field.
	Field string
	// Type is the Kubernetes cause type ("FieldValueRequired", ...), empty
	// when the problem is not about one field.
	Type field.ErrorType
	// Detail says what is wrong, in the words the API server would use
	// ("Required value", "Invalid value: 0: must be between 1 and 65535,
	// inclusive").
	Detail string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Detail)
	return b.String()
}

// ManifestError is a manifest that cannot be used, with every problem found.
type ManifestError struct {
	Problems []Problem
}

func (e *ManifestError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// problemError wraps a single problem as an error.
func problemError(p Problem) error {
	return &ManifestError{Problems: []Problem{p}}
}
