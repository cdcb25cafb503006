package nodeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubelettypes "k8s.io/kubelet/pkg/types"
)

// Runtime is the container runtime as the node API reaches it: core/runtime/cri's
// Client.
type Runtime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error)
	Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}

// streamOptions are the streams an exec or attach asks for.
type streamOptions struct{ stdin, stdout, stderr, tty bool }

// parseStreamOptions reads them as upstream's remotecommand NewOptions:
// "1" turns a stream on; with a tty there is no stderr (the terminal
// merges it); at least one of stdin, stdout and stderr is needed.
func parseStreamOptions(r *http.Request) (streamOptions, error) {
	o := streamOptions{
		tty:    r.FormValue(v1.ExecTTYParam) == "1",
		stdin:  r.FormValue(v1.ExecStdinParam) == "1",
		stdout: r.FormValue(v1.ExecStdoutParam) == "1",
		stderr: r.FormValue(v1.ExecStderrParam) == "1",
	}
	if o.tty && o.stderr {
		o.stderr = false
	}
	if !o.stdin && !o.stdout && !o.stderr {
		return o, errors.New("you must specify at least 1 of stdin, stdout, stderr")
	}
	return o, nil
}

// exec serves /exec/...: a command in a running container, streamed
// through the runtime's streaming server.
func (h *handlers) exec() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opts, id, ok := h.streamTarget(w, r)
		if !ok {
			return
		}
		resp, err := h.opts.Runtime.Exec(r.Context(), &runtimeapi.ExecRequest{
			ContainerId: id, Cmd: r.URL.Query()[v1.ExecCommandParam],
			Tty: opts.tty, Stdin: opts.stdin, Stdout: opts.stdout, Stderr: opts.stderr,
		})
		h.stream(w, r, resp.GetUrl(), err, opts)
	})
}

// attach serves /attach/...: the streams of a running container's main
// process.
func (h *handlers) attach() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opts, id, ok := h.streamTarget(w, r)
		if !ok {
			return
		}
		resp, err := h.opts.Runtime.Attach(r.Context(), &runtimeapi.AttachRequest{
			ContainerId: id, Tty: opts.tty, Stdin: opts.stdin, Stdout: opts.stdout, Stderr: opts.stderr,
		})
		h.stream(w, r, resp.GetUrl(), err, opts)
	})
}

// streamTarget reads an exec's or attach's options and finds its running
// container; on failure it has answered.
func (h *handlers) streamTarget(w http.ResponseWriter, r *http.Request) (streamOptions, string, bool) {
	opts, err := parseStreamOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return opts, "", false
	}
	pod, ok := h.podByName(r.PathValue("namespace"), r.PathValue("pod"))
	if !ok {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return opts, "", false
	}
	id, err := h.runningContainer(r.Context(), pod.UID, r.PathValue("container"))
	if err != nil {
		streamingError(w, err)
		return opts, "", false
	}
	return opts, id, true
}

// stream connects the client to the runtime's stream at rawURL: SPDY is
// proxied as it is (upstream's proxyStream); WebSocket, which the
// runtime's streaming server may not speak in the client's version, is
// translated to SPDY (translate.go).
func (h *handlers) stream(w http.ResponseWriter, r *http.Request, rawURL string, err error, opts streamOptions) {
	if err != nil {
		streamingError(w, err)
		return
	}
	location, err := url.Parse(rawURL)
	if err != nil {
		streamingError(w, fmt.Errorf("the runtime's stream URL %q: %w", rawURL, err))
		return
	}
	if wsstream.IsWebSocketRequest(r) {
		translateStream(w, r, location, opts, h.log)
		return
	}
	proxyStream(w, r, location, h.log)
}

// portForward serves /portForward/...: connections to the pod's ports,
// through the runtime's streaming server.
func (h *handlers) portForward() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tunnel := isTunnelRequest(r)
		var ports []int32
		if wsstream.IsWebSocketRequest(r) && !tunnel {
			var err error
			if ports, err = webSocketPorts(r); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		pod, ok := h.podByName(r.PathValue("namespace"), r.PathValue("pod"))
		if !ok {
			http.Error(w, "pod does not exist", http.StatusNotFound)
			return
		}
		if uid := types.UID(r.PathValue("uid")); uid != "" && uid != pod.UID {
			http.Error(w, "pod not found", http.StatusNotFound)
			return
		}
		sandbox, err := h.readySandbox(r.Context(), pod)
		if err != nil {
			streamingError(w, err)
			return
		}
		resp, err := h.opts.Runtime.PortForward(r.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: sandbox, Port: ports})
		if err != nil {
			streamingError(w, err)
			return
		}
		location, err := url.Parse(resp.GetUrl())
		if err != nil {
			streamingError(w, fmt.Errorf("the runtime's stream URL %q: %w", resp.GetUrl(), err))
			return
		}
		if tunnel {
			tunnelPortForward(w, r, location, h.log)
			return
		}
		// SPDY, and the kubelet's own WebSocket port-forward protocol, which
		// the runtime's streaming server speaks.
		proxyStream(w, r, location, h.log)
	})
}

// webSocketPorts are a WebSocket port-forward's ports, upstream's
// NewV4Options: one or more "port" parameters, each a comma-separated
// list of ports from 1 to 65535.
func webSocketPorts(r *http.Request) ([]int32, error) {
	values := r.URL.Query()[v1.PortHeader]
	if len(values) == 0 {
		return nil, fmt.Errorf("query parameter %q is required", v1.PortHeader)
	}
	var ports []int32
	for _, value := range values {
		if value == "" {
			return nil, fmt.Errorf("query parameter %q cannot be empty", v1.PortHeader)
		}
		for _, p := range strings.Split(value, ",") {
			port, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("unable to parse %q as a port: %v", value, err)
			}
			if port < 1 {
				return nil, fmt.Errorf("port %q must be > 0", value)
			}
			ports = append(ports, int32(port))
		}
	}
	return ports, nil
}

// run serves /run/...: POST cmd=<command, split at spaces>, run to its end
// (CRI ExecSync); the answer is its stdout, then its stderr. A command that
// fails answers 500, as upstream.
func (h *handlers) run() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pod, ok := h.podByName(r.PathValue("namespace"), r.PathValue("pod"))
		if !ok {
			http.Error(w, "pod does not exist", http.StatusNotFound)
			return
		}
		id, err := h.runningContainer(r.Context(), pod.UID, r.PathValue("container"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		cmd := strings.Split(r.URL.Query().Get("cmd"), " ")
		resp, err := h.opts.Runtime.ExecSync(r.Context(), id, cmd, 0)
		if err == nil && resp.ExitCode != 0 {
			err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), resp.ExitCode, resp.Stderr)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(resp.Stdout, resp.Stderr...))
	})
}

// runningContainer is the ID of the pod's running container of that name,
// from the runtime (upstream finds it in the runtime's pods too).
func (h *handlers) runningContainer(ctx context.Context, uid types.UID, name string) (string, error) {
	containers, err := h.opts.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{kubelettypes.KubernetesPodUIDLabel: string(uid), kubelettypes.KubernetesContainerNameLabel: name},
	})
	if err != nil {
		return "", err
	}
	if len(containers) == 0 {
		return "", fmt.Errorf("container not found (%q)", name)
	}
	return containers[0].Id, nil
}

// readySandbox is the pod's newest ready sandbox.
func (h *handlers) readySandbox(ctx context.Context, pod *v1.Pod) (string, error) {
	sandboxes, err := h.opts.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{kubelettypes.KubernetesPodUIDLabel: string(pod.UID)},
	})
	if err != nil {
		return "", err
	}
	var newest *runtimeapi.PodSandbox
	for _, s := range sandboxes {
		if newest == nil || s.CreatedAt > newest.CreatedAt {
			newest = s
		}
	}
	if newest == nil {
		return "", fmt.Errorf("pod not found (%q)", pod.Name+"_"+pod.Namespace)
	}
	return newest.Id, nil
}

// streamingError answers an error of the runtime's streaming as upstream's
// streaming.WriteError: NotFound 404, ResourceExhausted 429, else 500.
func streamingError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch grpcstatus.Code(err) {
	case codes.NotFound:
		code = http.StatusNotFound
	case codes.ResourceExhausted:
		// The runtime's in-flight requests expire after a minute.
		w.Header().Set("Retry-After", "60")
		code = http.StatusTooManyRequests
	}
	http.Error(w, err.Error(), code)
}
