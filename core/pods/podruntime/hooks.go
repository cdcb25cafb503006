package podruntime

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/sdk/httpget"
)

const (
	// maxHookResponseBody is how much of a hook's response is read (and
	// dropped) so the connection can be reused, as upstream.
	maxHookResponseBody = 10 << 10
)

// execer runs a command in a container (the CRI client's ExecSync).
type execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error)
}

// hookRunner runs lifecycle handlers (postStart, preStop), as upstream's
// pkg/kubelet/lifecycle handler runner.
type hookRunner struct {
	exec execer
	// http is upstream's insecureContainerLifecycleHTTPClient: it skips TLS
	// verification and follows no redirect to another host. It must never
	// carry credentials.
	http *http.Client
}

func newHookRunner(exec execer) *hookRunner {
	return &hookRunner{
		exec: exec,
		http: &http.Client{
			Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
			CheckRedirect: httpget.FollowSameHost,
		},
	}
}

// run runs handler for container c (instance containerID) of pod, whose
// addresses are podIPs. It returns a message for the user on failure.
// ctx bounds it: a preStop hook gets the grace period.
func (h *hookRunner) run(ctx context.Context, pod *v1.Pod, c *v1.Container, containerID string, handler *v1.LifecycleHandler, podIPs []string) (string, error) {
	switch {
	case handler.Exec != nil:
		resp, err := h.exec.ExecSync(ctx, containerID, handler.Exec.Command, 0)
		if err == nil && resp.GetExitCode() != 0 {
			err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(handler.Exec.Command, " "), resp.GetExitCode(), resp.GetStderr())
		}
		if err != nil {
			output := string(resp.GetStdout()) + string(resp.GetStderr())
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				handler.Exec.Command, c.Name, podFullName(pod), err, output), err
		}
		return "", nil
	case handler.HTTPGet != nil:
		if err := h.runHTTP(ctx, c, handler.HTTPGet, podIPs); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				handler.HTTPGet.Path, c.Name, podFullName(pod), err), err
		}
		return "", nil
	case handler.Sleep != nil:
		timer := time.NewTimer(time.Duration(handler.Sleep.Seconds) * time.Second)
		defer timer.Stop()
		select {
		case <-timer.C:
			return "", nil
		case <-ctx.Done():
			err := errors.New("container terminated before sleep hook finished")
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				handler.Sleep.Seconds, c.Name, podFullName(pod), err), err
		}
	}
	err := fmt.Errorf("invalid handler: %v", handler)
	return fmt.Sprintf("Cannot run handler: %v", err), err
}

// runHTTP sends the hook's GET. As upstream, any answer is success (the
// status code is not looked at); only failing to get one is a failure. An
// HTTPS request answered in plain HTTP is retried over HTTP.
func (h *hookRunner) runHTTP(ctx context.Context, c *v1.Container, action *v1.HTTPGetAction, podIPs []string) error {
	req, err := hookRequest(ctx, action, c, podIPs)
	if err != nil {
		return err
	}
	resp, err := h.http.Do(req)
	discardBody(resp)
	if err != nil && isHTTPResponseToHTTPS(err) {
		retry := req.Clone(ctx)
		retry.URL.Scheme = "http"
		retry.Header.Del("Authorization")
		resp, retryErr := h.http.Do(retry)
		discardBody(resp)
		if retryErr == nil {
			err = nil
		}
	}
	return err
}

// hookRequest builds an HTTP hook's request as upstream's
// NewRequestForHTTPGetAction (httpget.NewRequest) with the kube-lifecycle
// User-Agent: the host defaults to the pod's primary IP, the port is a
// number or a container port's name.
func hookRequest(ctx context.Context, action *v1.HTTPGetAction, c *v1.Container, podIPs []string) (*http.Request, error) {
	if action.Host == "" && len(podIPs) == 0 {
		return nil, errors.New("the pod has no IP address to send the hook to")
	}
	port, err := resolvePort(action.Port, c)
	if err != nil {
		return nil, err
	}
	headers := make([][2]string, 0, len(action.HTTPHeaders))
	for _, h := range action.HTTPHeaders {
		headers = append(headers, [2]string{h.Name, h.Value})
	}
	podIP := ""
	if len(podIPs) > 0 {
		podIP = podIPs[0]
	}
	a := httpget.Action{Scheme: string(action.Scheme), Host: action.Host, Port: port, Path: action.Path, Headers: headers}
	return httpget.NewRequest(ctx, a, podIP, "lifecycle")
}

// resolvePort is a hook's port: a number, a numeric string, or the name of
// one of the container's ports.
func resolvePort(port intstr.IntOrString, c *v1.Container) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return n, nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	return -1, fmt.Errorf("couldn't find port %q among the ports of container %q", port.StrVal, c.Name)
}

func isHTTPResponseToHTTPS(err error) bool {
	var urlErr *url.Error
	return errors.As(err, &urlErr) && strings.Contains(urlErr.Err.Error(), "server gave HTTP response to HTTPS client")
}

func discardBody(resp *http.Response) {
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	if resp.ContentLength <= maxHookResponseBody {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxHookResponseBody))
	}
}
