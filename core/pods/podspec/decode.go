package podspec

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxManifestBytes is the largest manifest accepted, upstream's
// maxConfigLength (pkg/kubelet/config/common.go).
const MaxManifestBytes = 10 << 20

// ErrManifestTooLarge is returned for a manifest over MaxManifestBytes.
var ErrManifestTooLarge = fmt.Errorf("the manifest is larger than %d bytes (10 MiB), the limit", MaxManifestBytes)

// deserializer decodes core/v1 objects from YAML or JSON without converting
// or defaulting them. The scheme holds core/v1 only: the core needs no other
// API group, and a bigger scheme is more code in every node's memory. Strict
// mode reports unknown and duplicate fields alongside the decoded object;
// they become warnings, as the API server's default field validation (Warn)
// treats them.
var deserializer = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		panic(err) // registering static types cannot fail
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// ReadManifest reads a whole manifest from r, refusing one over
// MaxManifestBytes with ErrManifestTooLarge.
func ReadManifest(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxManifestBytes {
		return nil, ErrManifestTooLarge
	}
	return data, nil
}

// Manifest is a decoded manifest: its pods as written, plus what it takes to
// point problems found later at lines.
type Manifest struct {
	// Pods are the manifest's pods as written, with nothing defaulted.
	Pods []*v1.Pod
	// Warnings are fields the decoder ignored (unknown or duplicated).
	Warnings []Problem

	tree *docNode
	list bool
}

// IsList reports whether the manifest is a PodList.
func (m *Manifest) IsList() bool {
	return m.list
}

// DecodePod decodes a manifest that must hold exactly one Pod, as a static
// pod file does.
func DecodePod(data []byte) (*Manifest, error) {
	return decode(data, false)
}

// DecodePodOrList decodes a manifest holding one Pod or a PodList, as the
// http and push sources accept.
func DecodePodOrList(data []byte) (*Manifest, error) {
	return decode(data, true)
}

func decode(data []byte, allowList bool) (*Manifest, error) {
	if len(data) > MaxManifestBytes {
		return nil, ErrManifestTooLarge
	}
	tree, err := parseTree(data)
	if err != nil {
		return nil, err
	}
	if err := checkTypeMeta(tree, allowList); err != nil {
		return nil, err
	}
	obj, _, err := deserializer.Decode(data, nil, nil)
	m := &Manifest{tree: tree}
	if strict, ok := runtime.AsStrictDecodingError(err); ok {
		m.Warnings = strictWarnings(tree, strict.Errors())
		err = nil
	}
	if err != nil {
		return nil, problemError(locateDecodeError(tree, err))
	}
	switch obj := obj.(type) {
	case *v1.Pod:
		m.Pods = []*v1.Pod{obj}
	case *v1.PodList:
		m.list = true
		m.Pods = make([]*v1.Pod, len(obj.Items))
		for i := range obj.Items {
			m.Pods[i] = &obj.Items[i]
		}
	default: // checkTypeMeta admits nothing else
		return nil, fmt.Errorf("decoded an unexpected %T", obj)
	}
	return m, nil
}

// checkTypeMeta insists on apiVersion v1 and kind Pod (or PodList), so that
// a wrong or missing one gets a message naming the field rather than the
// codec's, which quotes the whole manifest.
func checkTypeMeta(tree *docNode, allowList bool) error {
	kinds := []string{"Pod"}
	if allowList {
		kinds = append(kinds, "PodList")
	}
	if tree.kind != yaml.MappingNode {
		return problemError(Problem{Line: tree.line, Detail: "expected an object of kind " + strings.Join(kinds, " or ")})
	}
	var errs field.ErrorList
	apiVersion, _ := tree.scalar("apiVersion")
	switch apiVersion {
	case "v1":
	case "":
		errs = append(errs, field.Required(field.NewPath("apiVersion"), `must be "v1"`))
	default:
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), apiVersion, []string{"v1"}))
	}
	kind, _ := tree.scalar("kind")
	switch {
	case kind == "":
		errs = append(errs, field.Required(field.NewPath("kind"), "must be "+strings.Join(kinds, " or ")))
	case !slices.Contains(kinds, kind):
		errs = append(errs, field.NotSupported(field.NewPath("kind"), kind, kinds))
	}
	if len(errs) > 0 {
		return &ManifestError{Problems: locate(tree, "", errs)}
	}
	return nil
}

// locate turns field errors about the object at prefix into problems with
// document paths and lines.
func locate(tree *docNode, prefix string, errs field.ErrorList) []Problem {
	problems := make([]Problem, len(errs))
	for i, e := range errs {
		path := e.Field
		if prefix != "" {
			path = prefix + "." + path
		}
		problems[i] = Problem{Line: tree.lineOf(path), Field: path, Type: e.Type, Detail: e.ErrorBody()}
	}
	return problems
}

var (
	unknownFieldRE   = regexp.MustCompile(`^unknown field "(.*)"$`)
	duplicateFieldRE = regexp.MustCompile(`^duplicate field "(.*)"$`)
	yamlStrictLineRE = regexp.MustCompile(`line (\d+): (.*)`)
	// typeErrorRE matches encoding/json's UnmarshalTypeError, which names
	// the field as <GoStruct>.<path without list indices>.
	typeErrorRE = regexp.MustCompile(`cannot unmarshal (\w+) into Go struct field \w+\.(\S+) of type (\S+)`)
)

// strictWarnings turns what strict decoding objected to into problems. The
// codec reports them as text only, so the text is parsed.
func strictWarnings(tree *docNode, errs []error) []Problem {
	var warnings []Problem
	for _, err := range errs {
		msg := err.Error()
		if m := unknownFieldRE.FindStringSubmatch(msg); m != nil {
			warnings = append(warnings, Problem{Line: tree.lineOf(m[1]), Field: m[1], Detail: "unknown field, ignored"})
			continue
		}
		if m := duplicateFieldRE.FindStringSubmatch(msg); m != nil {
			warnings = append(warnings, Problem{Line: tree.lineOf(m[1]), Field: m[1], Detail: "duplicate field, the last value is used"})
			continue
		}
		if lines := yamlStrictLineRE.FindAllStringSubmatch(msg, -1); lines != nil {
			for _, m := range lines {
				var line int
				fmt.Sscan(m[1], &line)
				warnings = append(warnings, Problem{Line: line, Detail: m[2] + ", the last value is used"})
			}
			continue
		}
		warnings = append(warnings, Problem{Detail: msg})
	}
	return warnings
}

// locateDecodeError finds where in the document a decoding error is.
func locateDecodeError(tree *docNode, err error) Problem {
	if m := typeErrorRE.FindStringSubmatch(err.Error()); m != nil {
		jsonType, path, goType := m[1], m[2], m[3]
		if fullPath, n := tree.findTyped(strings.Split(path, "."), jsonType); n != nil {
			return Problem{
				Line:   n.line,
				Field:  fullPath,
				Type:   field.ErrorTypeTypeInvalid,
				Detail: fmt.Sprintf("Invalid value: %s: expected %s", n.describe(), goType),
			}
		}
		return Problem{Field: path, Type: field.ErrorTypeTypeInvalid, Detail: fmt.Sprintf("Invalid value: a %s: expected %s", jsonType, goType)}
	}
	if errors.Is(err, resource.ErrFormatWrong) || errors.Is(err, resource.ErrSuffix) || errors.Is(err, resource.ErrNumeric) {
		if p, ok := findBadQuantity(tree); ok {
			return p
		}
	}
	return Problem{Detail: strings.TrimPrefix(err.Error(), "json: ")}
}

// findBadQuantity finds the resource quantity that does not parse: the
// quantity decoder's error does not say which one it was.
func findBadQuantity(tree *docNode) (Problem, bool) {
	var found Problem
	ok := tree.walkScalars("", func(path string, n *docNode) bool {
		if !isQuantityPath(path) {
			return false
		}
		if _, err := resource.ParseQuantity(n.value); err != nil {
			found = Problem{Line: n.line, Field: path, Type: field.ErrorTypeInvalid, Detail: fmt.Sprintf("Invalid value: %q: %v", n.value, err)}
			return true
		}
		return false
	})
	return found, ok
}

// isQuantityPath reports whether a field of a Pod holds a resource.Quantity:
// the entries of resource lists and an emptyDir's size limit.
func isQuantityPath(path string) bool {
	segments := splitFieldPath(path)
	if len(segments) < 2 {
		return false
	}
	switch segments[len(segments)-2] {
	case "limits", "requests", "overhead":
		return true
	}
	return segments[len(segments)-1] == "sizeLimit"
}

// describe renders a node for a message: a scalar as written, a collection
// by its kind.
func (d *docNode) describe() string {
	switch d.kind {
	case yaml.MappingNode:
		return "an object"
	case yaml.SequenceNode:
		return "a list"
	}
	if d.tag == "!!str" {
		return fmt.Sprintf("%q", d.value)
	}
	return d.value
}
