package handler

import (
	"net"
	"strings"
	"testing"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

func TestTCPSocket(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		if conn, err := l.Accept(); err == nil {
			_ = conn.Close()
		}
	}()
	port := portOf(t, l.Addr().String())
	target := Target{PodIP: "127.0.0.1", Ports: []*typesv1.ContainerPort{{Name: "db", ContainerPort: port}}}

	if got := NewRunner(nil).Run(t.Context(), probeWith(&probesv1.TCPSocketAction{PortName: "db"}), target); got != (Outcome{Result: success}) {
		t.Errorf("Run against a listener = %+v, want success", got)
	}
	<-accepted

	got := NewRunner(nil).Run(t.Context(), probeWith(&probesv1.TCPSocketAction{Port: closedPort(t), Host: "127.0.0.1"}), Target{PodIP: "192.0.2.1"})
	if got.Result != failure || !strings.Contains(got.Output, "connection refused") {
		t.Errorf("Run against a closed port = %+v; want a failure saying the connection was refused", got)
	}
}
