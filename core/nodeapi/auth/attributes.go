package auth

import (
	"fmt"
	"net/http"
	"strings"
)

// Attributes are what a request to the node API asks to do, in the API
// server's authorization terms: a verb on the subresource of the node
// (resource nodes, API version v1, no namespace).
type Attributes struct {
	User        *User
	Verb        string
	Subresource string
	// Name is the node's name.
	Name string
	// Path is the request's path, for messages.
	Path string
}

// streamingPaths take commands into containers; a GET to them (the
// WebSocket and SPDY upgrades arrive as GETs) is a create, so that
// nodes/proxy get alone does not allow running commands.
var streamingPaths = []string{"/exec", "/attach", "/portForward", "/run"}

// fineGrained are upstream's KubeletFineGrainedAuthz subresources, tried
// before the general one (proxy) they refine.
var fineGrained = []struct{ path, subresource string }{
	{"/pods", "pods"},
	{"/healthz", "healthz"},
	{"/configz", "configz"},
	{"/runningpods/", "pods"},
}

// general are upstream's subresources by path; anything else is proxy.
var general = []struct{ path, subresource string }{
	{"/stats/", "stats"},
	{"/metrics", "metrics"},
	{"/logs/", "log"},
	{"/checkpoint/", "checkpoint"},
}

// ErrUnknownMethod is a request whose method has no API verb.
type ErrUnknownMethod string

func (e ErrUnknownMethod) Error() string {
	return fmt.Sprintf("method %s has no API verb: expected GET, HEAD, POST, PUT, PATCH or DELETE", string(e))
}

// RequestAttributes maps a request to what must be authorized, as
// upstream's nodeAuthorizerAttributesGetter with fine-grained authz: one
// Attributes per subresource, the finer first; the request is allowed if
// any of them is. Verbs follow the method (GET and HEAD get, POST create,
// PUT update, PATCH patch, DELETE delete), except that a GET to /exec,
// /attach, /portForward or /run is a create.
func RequestAttributes(u *User, nodeName string, r *http.Request) ([]Attributes, error) {
	path := r.URL.Path
	verb, err := verbOf(r.Method, path)
	if err != nil {
		return nil, err
	}
	var subresources []string
	for _, f := range fineGrained {
		if isSubpath(path, f.path) {
			subresources = append(subresources, f.subresource)
			break
		}
	}
	sub := "proxy"
	for _, g := range general {
		if isSubpath(path, g.path) {
			sub = g.subresource
			break
		}
	}
	subresources = append(subresources, sub)
	attrs := make([]Attributes, len(subresources))
	for i, s := range subresources {
		attrs[i] = Attributes{User: u, Verb: verb, Subresource: s, Name: nodeName, Path: path}
	}
	return attrs, nil
}

func verbOf(method, path string) (string, error) {
	switch method {
	case http.MethodGet, http.MethodHead:
		for _, p := range streamingPaths {
			if isSubpath(path, p) {
				return "create", nil
			}
		}
		return "get", nil
	case http.MethodPost:
		return "create", nil
	case http.MethodPut:
		return "update", nil
	case http.MethodPatch:
		return "patch", nil
	case http.MethodDelete:
		return "delete", nil
	}
	return "", ErrUnknownMethod(method)
}

// isSubpath is upstream's: path is p itself, or below it.
func isSubpath(path, p string) bool {
	p = strings.TrimSuffix(p, "/")
	return path == p || (strings.HasPrefix(path, p) && path[len(p)] == '/')
}
