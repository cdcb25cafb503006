// Package httpget builds the request of an httpGet action (a probe's or a
// lifecycle hook's) as upstream's pkg/probe/http/request.go does, for the
// core's hook runner and the probes plugin alike. It imports no k8s.io
// module, so plugins may use it.
package httpget

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// KubernetesVersion is the <major>.<minor> whose kubelet microlet follows,
// as the User-Agent names it.
const KubernetesVersion = "1.34"

// maxRedirects is how many redirects to the same host are followed, Go's
// (and so upstream's) default.
const maxRedirects = 10

// UserAgent is upstream's User-Agent for purpose ("probe", "lifecycle"):
// kube-<purpose>/<major>.<minor>.
func UserAgent(purpose string) string { return "kube-" + purpose + "/" + KubernetesVersion }

// Action is an httpGet action whose port is resolved.
type Action struct {
	Scheme string // "HTTP" or "HTTPS", any case; empty: http
	Host   string // empty: the pod's IP
	Port   int
	Path   string
	// Headers are the action's, in order; names repeat for several values.
	Headers [][2]string
}

// NewRequest is upstream's NewRequestForHTTPGetAction: the scheme in lower
// case, the pod's IP when the action names no host, the action's headers
// with a User-Agent of UserAgent(purpose) and an Accept of */* unless they
// set their own (an empty Accept removes it), and the Host header as the
// request's virtual host.
func NewRequest(ctx context.Context, a Action, podIP, purpose string) (*http.Request, error) {
	scheme := strings.ToLower(a.Scheme)
	if scheme == "" {
		scheme = "http"
	}
	host := a.Host
	if host == "" {
		host = podIP
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, formatURL(scheme, host, a.Port, a.Path).String(), nil)
	if err != nil {
		return nil, err
	}
	headers := http.Header{}
	for _, h := range a.Headers {
		headers.Add(h[0], h[1])
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", UserAgent(purpose))
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		headers.Del("Accept")
	}
	req.Header = headers
	req.Host = headers.Get("Host")
	return req, nil
}

// formatURL is upstream's: a path that does not parse is passed along as
// it is, the legacy prober behaviour.
func formatURL(scheme, host string, port int, path string) *url.URL {
	u, err := url.Parse(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	return u
}

// FollowSameHost is the CheckRedirect of probes and hooks (upstream's
// RedirectChecker without following non-local redirects): a redirect to
// another host is not followed, and its response is the answer.
func FollowSameHost(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}
