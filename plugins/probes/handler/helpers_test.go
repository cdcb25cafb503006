package handler

import (
	"net"
	"net/url"
	"strconv"
	"testing"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

const (
	success = probesv1.Result_RESULT_SUCCESS
	failure = probesv1.Result_RESULT_FAILURE
	unknown = probesv1.Result_RESULT_UNKNOWN
)

// probeWith is a probe of handler h with a one second timeout.
func probeWith(h any) *probesv1.Probe {
	p := &probesv1.Probe{TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	switch h := h.(type) {
	case *probesv1.ExecAction:
		p.Handler = &probesv1.Probe_Exec{Exec: h}
	case *probesv1.HTTPGetAction:
		p.Handler = &probesv1.Probe_HttpGet{HttpGet: h}
	case *probesv1.TCPSocketAction:
		p.Handler = &probesv1.Probe_TcpSocket{TcpSocket: h}
	case *probesv1.GRPCAction:
		p.Handler = &probesv1.Probe_Grpc{Grpc: h}
	}
	return p
}

// portOf is the port of a loopback listener or server URL.
func portOf(t *testing.T, addr string) int32 {
	t.Helper()
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		addr = u.Host
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return int32(n)
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := portOf(t, l.Addr().String())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}
