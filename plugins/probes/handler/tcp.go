package handler

import (
	"context"
	"net"
	"strconv"
	"time"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// tcpProbe is upstream's tcpSocket probe (pkg/probe/tcp): it succeeds when
// a connection opens within the timeout, and fails with the reason when
// none does.
func tcpProbe(ctx context.Context, a *probesv1.TCPSocketAction, t Target, timeout time.Duration) (outcome, error) {
	port, err := resolvePort(a.GetPort(), a.GetPortName(), t.Ports)
	if err != nil {
		return outcome{}, err
	}
	host := a.GetHost()
	if host == "" {
		host = t.PodIP
	}
	d := probeDialer()
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return failed(err.Error()), nil
	}
	// The connection has done its job; a failure to close it says nothing
	// about the container.
	_ = conn.Close()
	return succeeded(""), nil
}
