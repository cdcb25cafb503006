package handler

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// maxRedirects is how many redirects to the same host an HTTP probe
// follows, Go's (and so upstream's) default.
const maxRedirects = 10

// newHTTPTransport is upstream's probe transport: no TLS verification
// (probes check liveness, not identity), no keep-alive (every probe is a
// new connection), no proxy from the environment, no compression, the
// lingering probe dialer, and HTTP/2 where the server offers it, as
// apimachinery's SetTransportDefaults configures it.
func newHTTPTransport() *http.Transport {
	return &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
		TLSHandshakeTimeout: 10 * time.Second,
		DisableKeepAlives:   true,
		DisableCompression:  true,
		DialContext:         probeDialer().DialContext,
		ForceAttemptHTTP2:   true,
	}
}

// httpProbe is upstream's httpGet probe (pkg/probe/http): 2xx succeeds, 3xx
// left unfollowed succeeds with a warning, anything else fails; a request
// that cannot be made or answered fails with the reason.
func (r *Runner) httpProbe(ctx context.Context, a *probesv1.HTTPGetAction, t Target, timeout time.Duration) (outcome, error) {
	req, err := newHTTPRequest(ctx, a, t)
	if err != nil {
		return outcome{}, err
	}
	client := &http.Client{Timeout: timeout, Transport: r.transport, CheckRedirect: followSameHost}
	res, err := client.Do(req)
	if err != nil {
		return failed(err.Error()), nil
	}
	defer func() { _ = res.Body.Close() }()
	body, err := readAtMost(res.Body, maxOutputLength)
	if err != nil {
		return outcome{}, err
	}
	switch {
	case res.StatusCode >= http.StatusMultipleChoices && res.StatusCode < http.StatusBadRequest:
		return outcome{result: probesv1.Result_RESULT_SUCCESS, warning: true,
			output: fmt.Sprintf("Probe terminated redirects, Response body: %v", body)}, nil
	case res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusMultipleChoices:
		return succeeded(body), nil
	}
	// Upstream keeps the body out of the failure message
	// (kubernetes/kubernetes#99425).
	return failed(fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode)), nil
}

// newHTTPRequest is upstream's NewRequestForHTTPGetAction: scheme http by
// default, the pod IP when no host is given, the probe's headers with a
// User-Agent of kube-probe/<version> and an Accept of */* unless they set
// their own (an empty Accept removes it), and a Host header that names the
// virtual host.
func newHTTPRequest(ctx context.Context, a *probesv1.HTTPGetAction, t Target) (*http.Request, error) {
	scheme := strings.ToLower(a.GetScheme())
	if scheme == "" {
		scheme = "http"
	}
	host := a.GetHost()
	if host == "" {
		host = t.PodIP
	}
	port, err := resolvePort(a.GetPort(), a.GetPortName(), t.Ports)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, probeURL(scheme, host, port, a.GetPath()).String(), nil)
	if err != nil {
		return nil, err
	}
	headers := http.Header{}
	for _, h := range a.GetHeaders() {
		headers.Add(h.GetName(), h.GetValue())
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", UserAgent)
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

// probeURL is upstream's formatURL: a path that does not parse is passed
// along as it is, the legacy prober behaviour.
func probeURL(scheme, host string, port int, path string) *url.URL {
	u, err := url.Parse(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	return u
}

// followSameHost is upstream's RedirectChecker without following
// non-local redirects: a redirect to another host is not followed, and
// its response is the probe's.
func followSameHost(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// readAtMost reads up to limit bytes of r; a longer body is cut there.
func readAtMost(r io.Reader, limit int64) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil {
		return "", err
	}
	return string(b), nil
}
