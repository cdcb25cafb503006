package handler

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
	"github.com/microlet/microlet/sdk/httpget"
)

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
	client := &http.Client{Timeout: timeout, Transport: r.transport, CheckRedirect: httpget.FollowSameHost}
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

// newHTTPRequest is upstream's NewRequestForHTTPGetAction
// (httpget.NewRequest), with the port a number or a container port's name.
func newHTTPRequest(ctx context.Context, a *probesv1.HTTPGetAction, t Target) (*http.Request, error) {
	port, err := resolvePort(a.GetPort(), a.GetPortName(), t.Ports)
	if err != nil {
		return nil, err
	}
	headers := make([][2]string, 0, len(a.GetHeaders()))
	for _, h := range a.GetHeaders() {
		headers = append(headers, [2]string{h.GetName(), h.GetValue()})
	}
	action := httpget.Action{Scheme: a.GetScheme(), Host: a.GetHost(), Port: port, Path: a.GetPath(), Headers: headers}
	return httpget.NewRequest(ctx, action, t.PodIP, "probe")
}

// readAtMost reads up to limit bytes of r; a longer body is cut there.
func readAtMost(r io.Reader, limit int64) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil {
		return "", err
	}
	return string(b), nil
}
