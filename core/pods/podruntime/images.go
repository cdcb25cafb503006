package podruntime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/pods/pullcreds"
)

// imageService is the part of the CRI client the puller uses.
type imageService interface {
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
}

// PullCredentials finds the credentials for pulling a pod's image
// (pullcreds.Keyring): image is the repository without tag or digest.
type PullCredentials interface {
	Lookup(ctx context.Context, pod *v1.Pod, image string) pullcreds.Credentials
}

// imagePuller makes sure a container's image is present, as upstream's
// image manager (pkg/kubelet/images): pull policies, credentials, a
// backoff per pod and image after failed pulls, and a bound on concurrent
// pulls. It records upstream's image events against the container.
type imagePuller struct {
	images  imageService
	creds   PullCredentials
	events  events.Recorder
	backoff *backoff
	// slots bounds concurrent pulls: capacity 1 serializes them.
	slots   chan struct{}
	now     func() time.Time
	metrics *metrics
	log     hclog.Logger

	// lastErrors keeps the last pull error of each backoff key, which the
	// ImagePullBackOff message repeats.
	lastErrors sync.Map
}

func newImagePuller(images imageService, creds PullCredentials, recorder events.Recorder, maxParallel int, now func() time.Time, met *metrics, log hclog.Logger) *imagePuller {
	return &imagePuller{
		images:  images,
		creds:   creds,
		events:  recorder,
		backoff: newBackoff(imageBackOffPeriod, maxImageBackOff, now),
		slots:   make(chan struct{}, max(1, maxParallel)),
		now:     now,
		metrics: met,
		log:     log,
	}
}

// readyImage is a container's image once it is present: the runtime's
// reference to it, and its status when ensureImage read it (nil when the
// status after a pull could not be read).
type readyImage struct {
	ref    string
	status *runtimeapi.Image
}

// ensureImage returns c's image, pulling it per c's pull policy. A failure
// is a reasonError with upstream's reason and message.
func (p *imagePuller) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandboxConfig *runtimeapi.PodSandboxConfig) (readyImage, error) {
	// fail records the failure as upstream's event (reason) and returns it
	// as upstream's error (errReason).
	fail := func(reason string, errReason error, format string, args ...any) (readyImage, error) {
		msg := fmt.Sprintf(format, args...)
		p.event(pod, c, v1.EventTypeWarning, reason, msg)
		return readyImage{}, newReasonError(errReason, "%s", msg)
	}
	image, err := applyDefaultImageTag(c.Image)
	if err != nil {
		return fail(events.FailedToInspectImage, ErrInvalidImageName, "Failed to apply default image tag %q: %v", c.Image, err)
	}
	spec := &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: c.Image, Annotations: pod.Annotations}

	if c.ImagePullPolicy != v1.PullAlways {
		resp, err := p.images.ImageStatus(ctx, spec, false)
		if err != nil {
			return fail(events.FailedToInspectImage, ErrImageInspect, "Failed to inspect image %q: %v", c.Image, err)
		}
		if img := resp.GetImage(); img != nil {
			p.event(pod, c, v1.EventTypeNormal, events.PulledImage, fmt.Sprintf("Container image %q already present on machine", c.Image))
			return readyImage{ref: img.Id, status: img}, nil
		}
		if c.ImagePullPolicy == v1.PullNever {
			return fail(events.ErrImageNeverPullPolicy, ErrImageNeverPull, "Container image %q is not present with pull policy of Never", c.Image)
		}
	}

	key := string(pod.UID) + "_" + c.Image
	if p.backoff.inBackOffSinceUpdate(key) {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		p.event(pod, c, v1.EventTypeNormal, events.BackOffPullImage, msg)
		if last, ok := p.lastErrors.Load(key); ok {
			msg = fmt.Sprintf("%s: %s", msg, last)
		}
		return readyImage{}, newReasonError(ErrImagePullBackOff, "%s", msg)
	}
	p.lastErrors.Delete(key)

	auths := p.credentials(ctx, pod, image)
	p.event(pod, c, v1.EventTypeNormal, events.PullingImage, fmt.Sprintf("Pulling image %q", c.Image))
	pulled, err := p.pull(ctx, spec, auths, sandboxConfig)
	if err != nil {
		p.event(pod, c, v1.EventTypeWarning, events.FailedToPullImage, fmt.Sprintf("Failed to pull image %q: %v", c.Image, err))
		p.backoff.next(key, p.now())
		msg, reason := pullErrorReason(c.Image, err)
		p.lastErrors.Store(key, fmt.Sprintf("%v: %s", reason, msg))
		return readyImage{}, newReasonError(reason, "%s", msg)
	}
	p.event(pod, c, v1.EventTypeNormal, events.PulledImage, fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes.",
		c.Image, pulled.pullDuration, pulled.duration, pulled.status.GetSize()))
	p.backoff.gc()
	return pulled.readyImage, nil
}

// credentials are the credentials to try for image, in order; none: pull
// without. Pull secrets that cannot be read give upstream's
// FailedToRetrieveImagePullSecret event on the pod, and the pull is tried
// all the same.
func (p *imagePuller) credentials(ctx context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig {
	if p.creds == nil {
		return nil
	}
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil { // applyDefaultImageTag parsed it already
		return nil
	}
	found := p.creds.Lookup(ctx, pod, named.Name())
	if len(found.FailedSecrets) > 0 {
		p.events.Eventf(pod, v1.EventTypeWarning, events.FailedToRetrieveImagePullSecret,
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(found.FailedSecrets, ", "))
	}
	for _, problem := range found.Problems {
		p.log.Warn("image pull credentials", "pod", podFullName(pod), "image", image, "error", problem)
	}
	auths := make([]*runtimeapi.AuthConfig, len(found.Auths))
	for i, a := range found.Auths {
		auths[i] = &runtimeapi.AuthConfig{Username: a.Username, Password: a.Password}
	}
	return auths
}

// event records an image event against container c of pod.
func (p *imagePuller) event(pod *v1.Pod, c *v1.Container, eventType, reason, message string) {
	events.RecordContainer(p.events, pod, c.Name, "", eventType, reason, message)
}

// pulledImage is an image just pulled, with how long the pull took without
// and with the wait for a pull slot.
type pulledImage struct {
	readyImage
	pullDuration, duration time.Duration
}

// pull pulls an image once a pull slot is free, with each credential in
// turn until one works (without any when there are none), and records how
// long it took (waiting included, as upstream). All failing, the error has
// each attempt's, as upstream's aggregate.
func (p *imagePuller) pull(ctx context.Context, spec *runtimeapi.ImageSpec, auths []*runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (pulledImage, error) {
	start := time.Now()
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return pulledImage{}, ctx.Err()
	}
	pullStart := time.Now()
	ref, err := p.pullWith(ctx, spec, auths, sandboxConfig)
	<-p.slots
	if err != nil {
		return pulledImage{}, err
	}
	pulled := pulledImage{readyImage: readyImage{ref: ref}, pullDuration: time.Since(pullStart).Truncate(time.Millisecond)}
	if resp, err := p.images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false); err == nil {
		pulled.status = resp.GetImage()
	}
	elapsed := time.Since(start)
	pulled.duration = elapsed.Truncate(time.Millisecond)
	size := pulled.status.GetSize()
	p.metrics.observeImagePull(size, elapsed)
	p.log.Info("pulled image", "image", spec.UserSpecifiedImage, "ref", ref, "duration", pulled.duration, "size_bytes", size)
	return pulled, nil
}

// pullWith is the CRI pull without credentials, or with each in turn. An
// aggregate of one error reads as that error.
func (p *imagePuller) pullWith(ctx context.Context, spec *runtimeapi.ImageSpec, auths []*runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	if len(auths) == 0 {
		auths = []*runtimeapi.AuthConfig{nil}
	}
	var errs []error
	for _, auth := range auths {
		ref, err := p.images.PullImage(ctx, spec, auth, sandboxConfig)
		if err == nil {
			return ref, nil
		}
		errs = append(errs, runtimePullError(err))
	}
	return "", utilerrors.NewAggregate(errs)
}

// runtimePullError is the runtime's own error of a failed pull, as
// upstream's CRI client returns it ("rpc error: code = Unknown desc =
// failed to pull and unpack image ...: 401 Unauthorized"), which users
// see in the Failed event and the waiting message; a runtime that is down
// or did not answer in time keeps the CRI client's explanation.
func runtimePullError(err error) error {
	var s interface{ GRPCStatus() *status.Status }
	if err == nil || !errors.As(err, &s) {
		return err
	}
	switch st := s.GRPCStatus(); st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded:
		return err
	default:
		return st.Err()
	}
}

// pullErrorReason is upstream's evalCRIPullErr: the message of a failed pull
// and its reason (the runtime's registry-unavailable and signature errors
// keep theirs).
func pullErrorReason(image string, err error) (string, error) {
	for _, e := range []struct {
		err  error
		what string
	}{
		{crierrors.ErrRegistryUnavailable, "the registry is unavailable"},
		{crierrors.ErrSignatureValidationFailed, "the signature validation failed"},
	} {
		if strings.HasPrefix(err.Error(), e.err.Error()) {
			return fmt.Sprintf("image pull failed for %s because %s%s", image, e.what, strings.TrimPrefix(err.Error(), e.err.Error())), e.err
		}
	}
	return err.Error(), ErrImagePull
}

// applyDefaultImageTag adds ":latest" to an image that names no tag or
// digest, as upstream; a reference that does not parse is an error.
func applyDefaultImageTag(image string) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", fmt.Errorf("couldn't parse image name %q: %v", image, err)
	}
	_, tagged := named.(reference.Tagged)
	_, digested := named.(reference.Digested)
	if !tagged && !digested {
		return image + ":latest", nil
	}
	return image, nil
}

// imageUser is who the image runs as, from its config (upstream's
// getImageUser): root when it says nothing. The status ensureImage read
// moments ago serves; upstream reads it again, a CRI call per container
// start.
func (p *imagePuller) imageUser(ctx context.Context, image readyImage) (imageUser, error) {
	img := image.status
	if img == nil {
		resp, err := p.images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: image.ref}, false)
		if err != nil {
			return imageUser{}, err
		}
		img = resp.GetImage()
	}
	switch {
	case img.GetUid() != nil:
		uid := img.GetUid().Value
		return imageUser{uid: &uid}, nil
	case img.GetUsername() != "":
		return imageUser{username: img.GetUsername()}, nil
	}
	root := int64(0)
	return imageUser{uid: &root}, nil
}
