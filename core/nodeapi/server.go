// Package nodeapi serves the node API as the kubelet does, on its three
// listeners: port (10250: HTTPS, every endpoint, authenticated and
// authorized by core/nodeapi/auth), read_only_port (10255, off by default: plain
// HTTP without authentication, the read-only endpoints) and healthz_port
// (10248, on localhost: /healthz only). Paths, formats and status codes are
// upstream's (pkg/kubelet/server); docs/node-api.md lists them.
package nodeapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/kinds/stats"
	"github.com/microlet/microlet/core/node/machine"
	"github.com/microlet/microlet/core/nodeapi/auth"
	"github.com/microlet/microlet/core/nodeapi/healthz"
)

// The kubelet's HTTP server settings (ListenAndServeKubeletServer).
const (
	idleTimeout    = 90 * time.Second
	streamTimeout  = 4 * time.Hour
	maxHeaderBytes = 1 << 20
	// readHeaderTimeout bounds a client that never finishes its headers.
	readHeaderTimeout = 30 * time.Second
)

// Pods are the node's pods as the sync loop holds them.
type Pods interface {
	// PodsWithStatus are the desired pods, each with its latest status.
	PodsWithStatus() []*v1.Pod
}

// Options are what the node API serves from.
type Options struct {
	// Config is the running config: the listeners are set up from the one
	// at New; /configz shows the one in force.
	Config func() *config.Config
	// Auth guards the secure port; required when it is on.
	Auth *auth.Auth
	// ServingCertificate, when set, is the secure port's certificate
	// issued by the API server (server_tls_bootstrap); while it returns
	// nil the configured or self-signed pair serves.
	ServingCertificate func() *tls.Certificate
	Healthz            *healthz.Healthz
	Pods               Pods
	Runtime            Runtime
	Stats              *stats.Provider
	// Capacity is the machine's, for /spec/ and the machine metrics.
	Capacity *machine.Capacity
	// Identity is the machine's, for /spec/ and the machine metrics.
	Identity machine.Identity
	// PodCgroup is a pod's cgroup, for the cadvisor "id" label; ok false
	// when the pod has none.
	PodCgroup func(uid types.UID) (cgroup string, ok bool)
	// Metrics is every component's registry (/metrics); the server adds its
	// own request metrics. ProbeMetrics is /metrics/probes.
	Metrics      *prometheus.Registry
	ProbeMetrics prometheus.Gatherer
	// Logger shares the agent's level (go-hclog loggers derived from one
	// do): PUT /debug/flags/v sets it.
	Logger hclog.Logger
}

// Server is the node API's listeners.
type Server struct {
	opts     Options
	log      hclog.Logger
	requests *requestMetrics
	servers  []*http.Server
}

// New checks opts and prepares the handlers; Start listens.
func New(opts Options) (*Server, error) {
	cfg := opts.Config()
	if cfg.Port != 0 && opts.Auth == nil {
		return nil, errors.New("the secure port needs authentication and authorization")
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	requests, err := newRequestMetrics(opts.Metrics)
	if err != nil {
		return nil, fmt.Errorf("node API request metrics: %w", err)
	}
	return &Server{opts: opts, log: opts.Logger, requests: requests}, nil
}

// Start binds every configured listener and serves them in the
// background; it fails, having bound nothing, if any cannot be bound.
func (s *Server) Start() error {
	cfg := s.opts.Config()
	h := newHandlers(s.opts, s.log)
	type listener struct {
		name, addr string
		handler    http.Handler
		tls        *tls.Config
	}
	var listeners []listener
	if cfg.Port != 0 {
		tlsConfig, err := serverTLS(cfg, s.opts.Auth, s.opts.ServingCertificate, s.log)
		if err != nil {
			return err
		}
		handler := s.opts.Auth.Filter(limitRequests(h.mux(secureEndpoints, debuggingOf(cfg))), s.log.Named("auth"))
		listeners = append(listeners, listener{"node API", hostPort(cfg.Address, cfg.Port), s.requests.wrap(handler, serverReadWrite), tlsConfig})
	}
	if cfg.ReadOnlyPort != 0 {
		handler := limitRequests(h.mux(readOnlyEndpoints, debugging{}))
		listeners = append(listeners, listener{"read-only node API", hostPort(cfg.Address, cfg.ReadOnlyPort), s.requests.wrap(handler, serverReadOnly), nil})
	}
	if cfg.HealthzPort != 0 {
		mux := http.NewServeMux()
		s.opts.Healthz.Register(mux)
		listeners = append(listeners, listener{"healthz", hostPort(cfg.HealthzBindAddress, cfg.HealthzPort), mux, nil})
	}

	bound := make([]net.Listener, 0, len(listeners))
	for _, l := range listeners {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			for _, b := range bound {
				b.Close()
			}
			return fmt.Errorf("%s: %w", l.name, err)
		}
		if l.tls != nil {
			ln = tls.NewListener(ln, l.tls)
		}
		bound = append(bound, ln)
	}
	for i, l := range listeners {
		srv := &http.Server{
			Handler:           l.handler,
			IdleTimeout:       idleTimeout,
			ReadTimeout:       streamTimeout,
			WriteTimeout:      streamTimeout,
			ReadHeaderTimeout: readHeaderTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
			ErrorLog:          s.log.Named("http").StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}),
		}
		s.servers = append(s.servers, srv)
		go func(ln net.Listener, name string) {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("listener stopped", "listener", name, "error", err)
			}
		}(bound[i], l.name)
		scheme := "http"
		if l.tls != nil {
			scheme = "https"
		}
		s.log.Info("serving", "listener", l.name, "url", scheme+"://"+l.addr)
	}
	startContentionProfiling(cfg)
	return nil
}

// Shutdown stops accepting requests and waits for those in flight until
// ctx ends. Upgraded streams (exec, attach, port-forward) are not waited
// for: they end with the process.
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	for _, srv := range s.servers {
		errs = append(errs, srv.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

func hostPort(addr string, port int) string {
	return net.JoinHostPort(addr, strconv.Itoa(port))
}
