package nodeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/runtime/containerlogs"
)

// containerLogs serves /containerLogs/{namespace}/{pod}/{container} as the
// kubelet's getContainerLogs: the pod's log options from the query, the
// container instance its status names (the previous one with
// previous=true), and its CRI log read from the runtime's log path, which
// must lie in pod_logs_dir.
func (h *handlers) containerLogs() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opts, err := podLogOptions(r.URL.Query())
		if err != nil {
			var invalid invalidLogOptions
			if errors.As(err, &invalid) {
				writeMessage(w, http.StatusUnprocessableEntity, "Invalid request: "+err.Error())
			} else {
				writeMessage(w, http.StatusBadRequest, "Unable to decode query: "+err.Error())
			}
			return
		}
		namespace, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
		pod, ok := h.podByName(namespace, name)
		if !ok {
			http.Error(w, fmt.Sprintf("pod %q does not exist", name), http.StatusNotFound)
			return
		}
		if !hasContainer(pod, container) {
			http.Error(w, fmt.Sprintf("container %q not found in pod %q", container, name), http.StatusNotFound)
			return
		}
		id, err := logContainerID(pod, container, opts.Previous)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		log, err := h.containerLog(r.Context(), id)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		reader, err := containerlogs.Open(log, containerlogs.NewOptions(opts, time.Now()))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer reader.Close()
		var stdout, stderr io.Writer
		out := flushWriter{w: w, rc: http.NewResponseController(w)}
		switch ptrValue(opts.Stream, v1.LogStreamAll) {
		case v1.LogStreamStdout:
			stdout = out
		case v1.LogStreamStderr:
			stderr = out
		default:
			stdout, stderr = out, out
		}
		w.Header().Set("Content-Type", "text/plain")
		// The headers go at once: a follow may wait long for its first line.
		w.WriteHeader(http.StatusOK)
		_ = out.rc.Flush()
		if err := reader.Copy(r.Context(), stdout, stderr); err != nil && r.Context().Err() == nil {
			h.log.Warn("reading container log", "pod", namespace+"/"+name, "container", container, "error", err)
		}
	})
}

// containerLog is the log of a container instance: the runtime's log path,
// as a file below its pod's log directory in pod_logs_dir.
func (h *handlers) containerLog(ctx context.Context, id string) (containerlogs.Log, error) {
	resp, err := h.opts.Runtime.ContainerStatus(ctx, id, false)
	if err != nil {
		return containerlogs.Log{}, fmt.Errorf("unable to retrieve container logs for %s: %w", id, err)
	}
	path := resp.GetStatus().GetLogPath()
	podLogsDir := h.cfg.PodLogsDir
	rel, err := filepath.Rel(podLogsDir, path)
	podDir, name, ok := strings.Cut(rel, string(filepath.Separator))
	if path == "" || err != nil || !ok || podDir == ".." || !filepath.IsLocal(name) {
		return containerlogs.Log{}, fmt.Errorf("the runtime logs container %s to %q, outside the pod logs directory %s", id, path, podLogsDir)
	}
	return containerlogs.Log{
		Dir:  filepath.Join(podLogsDir, podDir),
		Name: name,
		Running: func(ctx context.Context) (bool, error) {
			resp, err := h.opts.Runtime.ContainerStatus(ctx, id, false)
			if status.Code(err) == codes.Unavailable {
				return true, nil // as upstream: the runtime restarting does not stop its containers
			}
			if err != nil {
				return false, err
			}
			return resp.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING, nil
		},
	}, nil
}

// invalidLogOptions are options that decode but do not validate.
type invalidLogOptions struct{ error }

// podLogOptions decodes and validates the query as upstream's
// ParameterCodec and ValidatePodLogOptions: tail is the old name of
// tailLines ("all": every line), booleans are false only for "0" or
// "false", and stream is one of All, Stdout, Stderr.
func podLogOptions(query url.Values) (*v1.PodLogOptions, error) {
	if tail := query.Get("tail"); tail != "" {
		query.Del("tailLines")
		if tail != "all" {
			query.Set("tailLines", tail)
		}
	}
	opts := &v1.PodLogOptions{}
	var errs []error
	for name, dst := range map[string]*bool{"follow": &opts.Follow, "previous": &opts.Previous, "timestamps": &opts.Timestamps,
		"insecureSkipTLSVerifyBackend": &opts.InsecureSkipTLSVerifyBackend} {
		if v, ok := query[name]; ok {
			if err := runtime.Convert_Slice_string_To_bool(&v, dst, nil); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
		}
	}
	for name, dst := range map[string]**int64{"sinceSeconds": &opts.SinceSeconds, "tailLines": &opts.TailLines, "limitBytes": &opts.LimitBytes} {
		if v, ok := query[name]; ok {
			if err := runtime.Convert_Slice_string_To_Pointer_int64(&v, dst, nil); err != nil {
				errs = append(errs, fmt.Errorf("%s: expected a whole number, got %q", name, v[0]))
			}
		}
	}
	if v, ok := query["sinceTime"]; ok {
		if err := metav1.Convert_Slice_string_To_Pointer_v1_Time(&v, &opts.SinceTime, nil); err != nil {
			errs = append(errs, fmt.Errorf("sinceTime: expected an RFC 3339 time, got %q", v[0]))
		}
	}
	if v, ok := query["stream"]; ok && len(v) > 0 {
		opts.Stream = &v[0]
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return opts, validateLogOptions(opts)
}

func validateLogOptions(o *v1.PodLogOptions) error {
	var errs []error
	if o.TailLines != nil && *o.TailLines < 0 {
		errs = append(errs, errors.New("tailLines: must be greater than or equal to 0"))
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		errs = append(errs, errors.New("limitBytes: must be greater than 0"))
	}
	switch {
	case o.SinceSeconds != nil && o.SinceTime != nil:
		errs = append(errs, errors.New("at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case o.SinceSeconds != nil && *o.SinceSeconds < 1:
		errs = append(errs, errors.New("sinceSeconds: must be greater than 0"))
	}
	if o.Stream != nil {
		switch *o.Stream {
		case v1.LogStreamAll:
		case v1.LogStreamStdout, v1.LogStreamStderr:
			if o.TailLines != nil {
				errs = append(errs, errors.New("`tailLines` and specific `stream` are mutually exclusive for now"))
			}
		default:
			errs = append(errs, fmt.Errorf("stream: expected All, Stdout or Stderr, got %q", *o.Stream))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return invalidLogOptions{err}
	}
	return nil
}

// logContainerID is the instance whose log to read, upstream's
// validateContainerLogStatus: the running one, else the terminated one,
// or the previous one when asked.
func logContainerID(pod *v1.Pod, container string, previous bool) (string, error) {
	var cs *v1.ContainerStatus
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == container {
				cs = &list[i]
			}
		}
		if cs != nil {
			break
		}
	}
	if cs == nil {
		return "", fmt.Errorf("container %q in pod %q is not available", container, pod.Name)
	}
	last := cs.LastTerminationState.Terminated
	var id string
	switch state := cs.State; {
	case previous:
		if last == nil || last.ContainerID == "" {
			return "", fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
		}
		id = last.ContainerID
	case state.Running != nil:
		id = cs.ContainerID
	case state.Terminated != nil:
		id = state.Terminated.ContainerID
		if id == "" && last != nil {
			id = last.ContainerID
		}
		if id == "" {
			return "", fmt.Errorf("container %q in pod %q is terminated", container, pod.Name)
		}
	case last != nil:
		if last.ContainerID == "" {
			return "", fmt.Errorf("container %q in pod %q is terminated", container, pod.Name)
		}
		id = last.ContainerID
	case state.Waiting != nil:
		return "", waitingError(container, pod.Name, state.Waiting.Reason)
	default:
		return "", fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", container, pod.Name)
	}
	_, bare, ok := strings.Cut(id, "://")
	if !ok {
		return "", fmt.Errorf("container %q in pod %q has a malformed ID %q", container, pod.Name, id)
	}
	return bare, nil
}

// waitingError is upstream's word for the common pending failures.
func waitingError(container, pod, reason string) error {
	switch reason {
	case "ErrImagePull":
		return fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", container, pod)
	case "ImagePullBackOff":
		return fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", container, pod)
	}
	return fmt.Errorf("container %q in pod %q is waiting to start: %v", container, pod, reason)
}

// hasContainer says whether the pod's spec has the container, of any kind.
func hasContainer(pod *v1.Pod, name string) bool {
	for _, c := range append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// podByName is a desired pod, with its status.
func (h *handlers) podByName(namespace, name string) (*v1.Pod, bool) {
	for _, p := range h.opts.Pods.PodsWithStatus() {
		if p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// flushWriter sends each write to the client at once, for a follow.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}

// writeMessage answers {"message": msg}, the kubelet's JSON error shape
// for bad log queries.
func writeMessage(w http.ResponseWriter, code int, msg string) {
	body, _ := json.Marshal(map[string]string{"message": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func ptrValue[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
