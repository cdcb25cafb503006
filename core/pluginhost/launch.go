package pluginhost

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"

	basev1 "github.com/microlet/microlet/proto/microlet/base/v1"
	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	"github.com/microlet/microlet/sdk/transport"
)

// launchMode says how far a launch goes.
type launchMode int

const (
	// launchServe configures the process to serve.
	launchServe launchMode = iota
	// launchValidate stops after the identity check, for ValidateConfig.
	launchValidate
)

// launch starts a process for spec and takes it through the handshake, the
// identity check and, for launchServe, the host service, Configure and a
// health check. Any failure kills the process and says why. The whole of it
// is bounded by StartTimeout and ctx.
func (h *Host) launch(ctx context.Context, spec resolvedSpec, mode launchMode) (pr *process, err error) {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, h.opts.StartTimeout)
	defer cancel()

	bin, err := openVerifiedBinary(h.opts.Dir, spec.Binary, spec.SHA256, os.Geteuid())
	if err != nil {
		return nil, binaryRefusal{err}
	}
	defer bin.Close() // the runner closes it once started; this covers failures before

	pr = newProcess()
	pr.spec = spec
	pr.digest = spec.SHA256 // verified; unpinned binaries are hashed only when a change must be judged
	// started is how the goroutine that watches ctx learns of the runner,
	// which go-plugin creates inside Client().
	var started atomic.Pointer[processRunner]
	// The transport's launch settings (gRPC only, sockets in SocketDir, no
	// host environment, bounded messages), started by our own runner.
	config := transport.ClientConfig(nil, h.opts.SocketDir, exitLogger{Logger: h.opts.Logger.Named("plugin").Named(string(spec.Kind)), pr: pr})
	config.RunnerFunc = func(logger hclog.Logger, template *exec.Cmd, _ string) (runner.Runner, error) {
		r, err := newProcessRunner(logger, template, bin, spec.Name, spec.Args, processEnv(spec, h.opts.LogLevel))
		if err != nil {
			return nil, err
		}
		pr.runner = r
		started.Store(r)
		return r, nil
	}
	if h.opts.OnCall != nil {
		config.GRPCDialOptions = append(config.GRPCDialOptions, callObserver(h.opts.OnCall, spec.Kind, spec.Name)...)
	}
	config.StartTimeout = h.opts.StartTimeout
	pr.client = plugin.NewClient(config)
	// go-plugin waits for the handshake without a context: end the process
	// if ctx ends first. (Deferred calls run in reverse: the watch stops
	// before cancel, so a launched process survives the launch.)
	stopWatching := context.AfterFunc(ctx, func() {
		if r := started.Load(); r != nil {
			r.killGroup()
		}
	})
	defer stopWatching()
	defer func() {
		if err == nil {
			return
		}
		if pr.runner != nil {
			pr.kill("refused at launch, never served: " + err.Error())
		}
		pr.client.Kill()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (launch abandoned after %s: %v)", err, time.Since(begin).Round(time.Millisecond), context.Cause(ctx))
		}
		pr, err = nil, fmt.Errorf("plugin %s: %w", spec, err)
	}()

	if err := h.handshake(ctx, pr); err != nil {
		return pr, err
	}
	if mode == launchValidate {
		return pr, nil
	}
	if err := h.configure(ctx, pr); err != nil {
		return pr, err
	}
	if err := pr.checkHealth(ctx, h.opts.HealthTimeout); err != nil {
		return pr, fmt.Errorf("health check after configure: %w", err)
	}
	pr.started = time.Now()
	go func() {
		select {
		case <-pr.exited:
			pr.closeDone()
		case <-pr.done:
		}
	}()
	return pr, nil
}

// handshake starts the process, dispenses the connection, and checks who
// answers.
func (h *Host) handshake(ctx context.Context, pr *process) error {
	rpc, err := pr.client.Client()
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	pr.pid = pr.runner.pid
	raw, err := rpc.Dispense(transport.PluginName)
	if err != nil {
		return fmt.Errorf("dispense: %w", err)
	}
	conn, ok := raw.(*transport.Conn)
	if !ok {
		return fmt.Errorf("dispense: got %T, expected *transport.Conn", raw)
	}
	pr.conn = conn.Conn
	pr.broker = conn.Broker
	pr.exited = pr.runner.exited

	base := basev1.NewPluginServiceClient(pr.conn)
	id, err := base.GetIdentity(ctx, &basev1.GetIdentityRequest{})
	if err != nil {
		return fmt.Errorf("GetIdentity: %w", err)
	}
	pr.identity = Identity{Kind: id.GetKind(), Name: id.GetName(), PluginVersion: id.GetPluginVersion(), APIVersions: id.GetApiVersions()}
	if Kind(pr.identity.Kind) != pr.spec.Kind || pr.identity.Name != pr.spec.Name {
		return fmt.Errorf("binary %s says it is plugin %s/%s, but the config expects %s",
			pr.runner.binary.path, pr.identity.Kind, pr.identity.Name, pr.spec)
	}
	kind, _ := pr.spec.Kind.Info()
	if pr.apiVersion, err = chooseAPIVersion(pr.spec.Kind, kind.APIVersions, pr.identity.APIVersions); err != nil {
		return err
	}
	caps, err := base.GetCapabilities(ctx, &basev1.GetCapabilitiesRequest{})
	if err != nil {
		return fmt.Errorf("GetCapabilities: %w", err)
	}
	pr.capabilities = caps.GetCapabilities()
	// A newer plugin may offer calls this core does not make yet.
	var unknown []string
	for _, c := range pr.capabilities {
		if !slices.Contains(kind.Capabilities, c) {
			unknown = append(unknown, c)
		}
	}
	if len(unknown) > 0 {
		h.opts.Logger.Debug("the plugin declares capabilities this core does not use", "plugin", pr.spec.String(), "capabilities", unknown)
	}
	return nil
}

// configure serves the host service to the process (once, for its life) and
// applies the spec's config.
func (h *Host) configure(ctx context.Context, pr *process) error {
	var brokerID uint32
	if h.opts.HostService != nil {
		brokerID = pr.broker.NextId()
		go pr.broker.AcceptAndServe(brokerID, func(opts []grpc.ServerOption) *grpc.Server {
			server := grpc.NewServer(append(opts, transport.ServerOptions()...)...)
			hostv1.RegisterHostServiceServer(server, h.opts.HostService)
			return server
		})
	}
	_, err := basev1.NewPluginServiceClient(pr.conn).Configure(ctx, &basev1.ConfigureRequest{
		ApiVersion:          pr.apiVersion,
		Config:              pr.spec.config,
		HostServiceBrokerId: brokerID,
		NodeName:            h.opts.NodeName,
		LogLevel:            h.opts.LogLevel,
	})
	if err != nil {
		return fmt.Errorf("Configure: %w", configErrorsOf(err))
	}
	return nil
}
