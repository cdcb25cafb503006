package handler

import (
	"net"
	"syscall"
)

// probeDialer is upstream's probe.ProbeDialer: its sockets linger one
// second on close instead of waiting out TIME-WAIT, so that frequent probes
// do not pile up sockets (kubernetes/kubernetes#89898). One second rather
// than zero closes with a FIN, not an RST that would discard pending data.
func probeDialer() *net.Dialer {
	return &net.Dialer{
		Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) {
				// Best effort, as upstream: a socket that keeps the default
				// linger still probes correctly.
				_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
			})
		},
	}
}
