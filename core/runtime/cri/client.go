package cri

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	// criVersion is the runtime_api_version a v1 runtime reports.
	criVersion = "v1"
	// kubeAPIVersion is what the kubelet sends in VersionRequest.
	kubeAPIVersion = "0.1.0"
	// maxMsgSize is the kubelet's limit on CRI messages (16 MiB): big
	// ListContainers answers on busy nodes need more than gRPC's 4 MiB.
	maxMsgSize = 16 << 20
)

// reconnect is how gRPC redials a runtime that went away. Calls made
// meanwhile fail at once (they do not wait for the connection), and the
// redial backs off to at most a second, so the client works again within
// about a second of the runtime's return.
var reconnect = grpc.ConnectParams{
	Backoff: backoff.Config{
		BaseDelay:  100 * time.Millisecond,
		Multiplier: 1.6,
		Jitter:     0.2,
		MaxDelay:   time.Second,
	},
	MinConnectTimeout: 5 * time.Second,
}

// Client is a connection to a CRI runtime. It is safe for concurrent use and
// outlives runtime restarts; Close releases it.
type Client struct {
	cfg     Config
	log     hclog.Logger
	version *runtimeapi.VersionResponse

	runtimeConn *grpc.ClientConn
	imageConn   *grpc.ClientConn
	runtime     runtimeapi.RuntimeServiceClient
	images      runtimeapi.ImageServiceClient

	ops             *operations
	eventsSupported atomic.Bool
}

// Connect dials the runtime and image endpoints, waits up to
// cfg.ConnectTimeout (and no longer than ctx allows) for the runtime to
// answer, checks that it speaks CRI v1 and finds out whether it streams
// container events.
func Connect(ctx context.Context, cfg Config, log hclog.Logger) (*Client, error) {
	cfg = cfg.withDefaults()
	c := &Client{cfg: cfg, log: log.Named("cri")}
	var err error
	if c.ops, err = newOperations(cfg.Metrics, c.log); err != nil {
		return nil, err
	}
	if c.runtimeConn, err = dial(cfg.RuntimeEndpoint, c.ops); err != nil {
		return nil, err
	}
	c.imageConn = c.runtimeConn
	if cfg.ImageEndpoint != cfg.RuntimeEndpoint {
		if c.imageConn, err = dial(cfg.ImageEndpoint, c.ops); err != nil {
			c.runtimeConn.Close()
			return nil, err
		}
	}
	c.runtime = runtimeapi.NewRuntimeServiceClient(c.runtimeConn)
	c.images = runtimeapi.NewImageServiceClient(c.imageConn)

	if err := c.waitForRuntime(ctx); err != nil {
		c.Close()
		return nil, err
	}
	c.eventsSupported.Store(c.probeEvents(ctx))
	c.log.Info("connected to the container runtime",
		"endpoint", cfg.RuntimeEndpoint, "image_endpoint", cfg.ImageEndpoint,
		"runtime", c.version.RuntimeName, "version", c.version.RuntimeVersion,
		"container_events", c.eventsSupported.Load())
	return c, nil
}

func dial(endpoint string, ops *operations) (*grpc.ClientConn, error) {
	target, err := grpcTarget(endpoint)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(reconnect),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)),
		grpc.WithUnaryInterceptor(ops.unary),
		grpc.WithStreamInterceptor(ops.stream),
	)
	if err != nil {
		return nil, fmt.Errorf("CRI endpoint %q: %w", endpoint, err)
	}
	return conn, nil
}

// waitForRuntime asks for the version until the runtime answers, then checks
// both services speak CRI v1.
func (c *Client) waitForRuntime(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer cancel()
	version, err := c.runtime.Version(ctx, &runtimeapi.VersionRequest{Version: kubeAPIVersion}, grpc.WaitForReady(true))
	switch {
	case status.Code(err) == codes.Unimplemented:
		return fmt.Errorf("the runtime at %s does not serve CRI v1 (runtime.v1.RuntimeService): %w", c.cfg.RuntimeEndpoint, err)
	case err != nil:
		return fmt.Errorf("the container runtime at %s did not answer within %s: %w", c.cfg.RuntimeEndpoint, c.cfg.ConnectTimeout, err)
	case version.RuntimeApiVersion != criVersion:
		return fmt.Errorf("the runtime at %s (%s %s) speaks CRI %q; microlet needs %q",
			c.cfg.RuntimeEndpoint, version.RuntimeName, version.RuntimeVersion, version.RuntimeApiVersion, criVersion)
	}
	c.version = version
	_, err = c.images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{}, grpc.WaitForReady(true))
	switch {
	case status.Code(err) == codes.Unimplemented:
		return fmt.Errorf("the runtime at %s does not serve CRI v1 images (runtime.v1.ImageService): %w", c.cfg.ImageEndpoint, err)
	case err != nil:
		return fmt.Errorf("the image service at %s did not answer within %s: %w", c.cfg.ImageEndpoint, c.cfg.ConnectTimeout, err)
	}
	return nil
}

// RuntimeVersion is what the runtime said about itself at Connect.
func (c *Client) RuntimeVersion() *runtimeapi.VersionResponse {
	return c.version
}

// Close releases the connections. Calls in flight fail.
func (c *Client) Close() error {
	err := c.runtimeConn.Close()
	if c.imageConn != c.runtimeConn {
		err = errors.Join(err, c.imageConn.Close())
	}
	return err
}

// callContext bounds an ordinary call: RequestTimeout plus extra for calls
// that wait on a container, unless the caller's deadline is sooner.
func (c *Client) callContext(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.RequestTimeout+extra)
}

// wrap names the call and the object in an error from the runtime service
// and says plainly when the runtime is unreachable. The gRPC status stays
// reachable for status.Code.
func (c *Client) wrap(call, object string, err error) error {
	return wrapError(c.cfg.RuntimeEndpoint, call, object, err)
}

// wrapImage is wrap for the image service.
func (c *Client) wrapImage(call, object string, err error) error {
	return wrapError(c.cfg.ImageEndpoint, call, object, err)
}

func wrapError(endpoint, call, object string, err error) error {
	if err == nil {
		return nil
	}
	what := call
	if object != "" {
		what = fmt.Sprintf("%s %q", call, object)
	}
	switch status.Code(err) {
	case codes.Unavailable:
		return fmt.Errorf("CRI %s: the container runtime at %s is unavailable: %w", what, endpoint, err)
	case codes.DeadlineExceeded:
		return fmt.Errorf("CRI %s: no answer from %s in time: %w", what, endpoint, err)
	}
	return fmt.Errorf("CRI %s: %w", what, err)
}
