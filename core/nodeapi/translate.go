package nodeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-hclog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
)

// WebSocket exec and attach. The runtime's streaming server may not speak
// the client's WebSocket protocol: containerd 1.6 serves channel.k8s.io up
// to v4, and client-go's WebSocket executor speaks only v5 (which adds the
// half-close of stdin), as the API server's stream translator does. So
// microlet ends the WebSocket itself, in any version the kubelet's
// streaming server knows plus v5, and streams to the runtime over SPDY,
// which every runtime speaks: the same translation the API server makes
// (k8s.io/apiserver pkg/util/proxy StreamTranslatorHandler).

// The WebSocket protocols of exec and attach, newest first.
const (
	v5BinaryProtocol = remotecommandconsts.StreamProtocolV5Name // v5.channel.k8s.io
	v4BinaryProtocol = "v4." + wsstream.ChannelWebSocketProtocol
	v4Base64Protocol = "v4." + wsstream.Base64ChannelWebSocketProtocol
)

// Translation settings: the API server's and the kubelet's.
const (
	wsIdleTimeout      = 4 * time.Hour
	spdyPingPeriod     = 5 * time.Second
	statusWriteTimeout = 10 * time.Second
)

// translateStream serves a WebSocket exec or attach by an SPDY stream to
// the runtime at location.
func translateStream(w http.ResponseWriter, r *http.Request, location *url.URL, opts streamOptions, log hclog.Logger) {
	channels := make([]wsstream.ChannelType, 5)
	channels[remotecommandconsts.StreamStdIn] = channelIf(opts.stdin, wsstream.ReadChannel)
	channels[remotecommandconsts.StreamStdOut] = channelIf(opts.stdout, wsstream.WriteChannel)
	channels[remotecommandconsts.StreamStdErr] = channelIf(opts.stderr, wsstream.WriteChannel)
	channels[remotecommandconsts.StreamErr] = wsstream.WriteChannel
	channels[remotecommandconsts.StreamResize] = wsstream.ReadChannel
	binary := wsstream.ChannelProtocolConfig{Binary: true, Channels: channels}
	base64 := wsstream.ChannelProtocolConfig{Binary: false, Channels: channels}
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		"":                                      binary, // no protocol asked: the kubelet's default
		wsstream.ChannelWebSocketProtocol:       binary,
		wsstream.Base64ChannelWebSocketProtocol: base64,
		v4BinaryProtocol:                        binary,
		v4Base64Protocol:                        base64,
		v5BinaryProtocol:                        binary,
	})
	conn.SetIdleTimeout(wsIdleTimeout)
	protocol, streams, err := conn.Open(w, r)
	if err != nil {
		log.Debug("websocket exec/attach: the upgrade failed", "path", r.URL.Path, "error", err)
		return // the WebSocket server answered the client
	}
	defer conn.Close()

	// An empty message on the first writable channel tells the client the
	// streams are up (the kubelet's and the API server's handshake).
	first := remotecommandconsts.StreamErr
	switch {
	case opts.stdout:
		first = remotecommandconsts.StreamStdOut
	case opts.stderr:
		first = remotecommandconsts.StreamStdErr
	}
	if _, err := streams[first].Write(nil); err != nil {
		return
	}
	writeStatus := statusWriter(protocol, streams[remotecommandconsts.StreamErr], conn)

	rt, err := spdy.NewRoundTripperWithConfig(spdy.RoundTripperConfig{PingPeriod: spdyPingPeriod})
	if err != nil {
		writeStatus(apierrors.NewInternalError(err))
		return
	}
	executor, err := remotecommand.NewSPDYExecutorRejectRedirects(rt, rt, http.MethodPost, location)
	if err != nil {
		writeStatus(apierrors.NewInternalError(err))
		return
	}
	var sopts remotecommand.StreamOptions
	if opts.stdin {
		sopts.Stdin = streams[remotecommandconsts.StreamStdIn]
	}
	if opts.stdout {
		sopts.Stdout = streams[remotecommandconsts.StreamStdOut]
	}
	if opts.stderr {
		sopts.Stderr = streams[remotecommandconsts.StreamStdErr]
	}
	if opts.tty {
		sopts.Tty = true
		sopts.TerminalSizeQueue = newResizeQueue(r.Context(), streams[remotecommandconsts.StreamResize])
	}
	err = executor.StreamWithContext(r.Context(), sopts)
	switch e := err.(type) {
	case nil:
		writeStatus(&apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusSuccess}})
	case *apierrors.StatusError:
		writeStatus(e)
	case exec.CodeExitError:
		writeStatus(exitStatus(e))
	default:
		log.Debug("websocket exec/attach: the runtime's stream failed", "path", r.URL.Path, "error", err)
		writeStatus(apierrors.NewInternalError(err))
	}
}

func channelIf(on bool, t wsstream.ChannelType) wsstream.ChannelType {
	if on {
		return t
	}
	return wsstream.IgnoreChannel
}

// statusWriter writes the outcome on the error channel: a metav1.Status as
// JSON from v4 on, before that only a failure's message, as the kubelet's
// v1WriteStatusFunc and v4WriteStatusFunc.
func statusWriter(protocol string, stream io.Writer, conn *wsstream.Conn) func(*apierrors.StatusError) {
	return func(status *apierrors.StatusError) {
		conn.SetWriteDeadline(statusWriteTimeout)
		switch protocol {
		case v4BinaryProtocol, v4Base64Protocol, v5BinaryProtocol:
			body, err := json.Marshal(status.Status())
			if err == nil {
				_, _ = stream.Write(body)
			}
		default:
			if status.Status().Status != metav1.StatusSuccess {
				_, _ = stream.Write([]byte(status.Error()))
			}
		}
	}
}

// exitStatus is a command's non-zero exit as the remote command protocol
// reports it: reason NonZeroExitCode, the code in a cause.
func exitStatus(e exec.CodeExitError) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Reason:  remotecommandconsts.NonZeroExitCodeReason,
		Message: fmt.Sprintf("command terminated with non-zero exit code: %v", e),
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
			{Type: remotecommandconsts.ExitCodeCauseType, Message: fmt.Sprintf("%d", e.ExitStatus())},
		}},
	}}
}

// resizeQueue feeds the terminal sizes the client sends (JSON on the
// resize channel) to the SPDY stream.
type resizeQueue struct {
	sizes chan remotecommand.TerminalSize
}

func newResizeQueue(ctx context.Context, stream io.Reader) *resizeQueue {
	q := &resizeQueue{sizes: make(chan remotecommand.TerminalSize)}
	go func() {
		defer close(q.sizes)
		dec := json.NewDecoder(stream)
		for {
			var size remotecommand.TerminalSize
			if err := dec.Decode(&size); err != nil {
				return
			}
			select {
			case q.sizes <- size:
			case <-ctx.Done():
				return
			}
		}
	}()
	return q
}

func (q *resizeQueue) Next() *remotecommand.TerminalSize {
	size, ok := <-q.sizes
	if !ok {
		return nil
	}
	return &size
}
