package podruntime

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"

	"github.com/microlet/microlet/core/cluster/events"
)

// fakeImages is an image service with a set of present images.
type fakeImages struct {
	mu      sync.Mutex
	present map[string]*runtimeapi.Image
	pullErr error
	pulls   []string
	// authErrs fail pulls with a credential of that username; auths are
	// the usernames pulls had ("" without credentials).
	authErrs map[string]error
	auths    []string
	// statuses counts ImageStatus calls.
	statuses int
	// block, when set, holds every pull until it is closed.
	block   chan struct{}
	active  int
	maxSeen int
}

func (f *fakeImages) ImageStatus(_ context.Context, spec *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses++
	return &runtimeapi.ImageStatusResponse{Image: f.present[spec.Image]}, nil
}

func (f *fakeImages) PullImage(_ context.Context, spec *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	f.pulls = append(f.pulls, spec.Image)
	f.auths = append(f.auths, auth.GetUsername())
	if err := f.authErrs[auth.GetUsername()]; err != nil {
		f.mu.Unlock()
		return "", err
	}
	f.active++
	f.maxSeen = max(f.maxSeen, f.active)
	block := f.block
	f.mu.Unlock()
	if block != nil {
		<-block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active--
	if f.pullErr != nil {
		return "", f.pullErr
	}
	ref := "sha256:" + strings.ReplaceAll(spec.Image, "/", "-")
	f.present[ref] = &runtimeapi.Image{Id: ref, Size: 5 << 20}
	return ref, nil
}

func newTestPuller(t *testing.T, images *fakeImages, maxParallel int, clock *fakeClock) *imagePuller {
	t.Helper()
	met, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	return newImagePuller(images, nil, events.Nop, maxParallel, clock.Now, met, hclog.NewNullLogger())
}

func TestEnsureImagePolicies(t *testing.T) {
	present := &runtimeapi.Image{Id: "sha256:present"}
	for _, tc := range []struct {
		name       string
		image      string
		policy     v1.PullPolicy
		want       string
		wantPulls  []string
		wantReason error
		wantMsg    string
	}{
		{name: "IfNotPresent, present", image: "localhost/busybox:1", policy: v1.PullIfNotPresent, want: "sha256:present"},
		{name: "Never, present", image: "localhost/busybox:1", policy: v1.PullNever, want: "sha256:present"},
		{name: "Always pulls even when present", image: "localhost/busybox:1", policy: v1.PullAlways,
			want: "sha256:localhost-busybox:1", wantPulls: []string{"localhost/busybox:1"}},
		{name: "IfNotPresent, absent, pulled with the default tag", image: "localhost/app", policy: v1.PullIfNotPresent,
			want: "sha256:localhost-app:latest", wantPulls: []string{"localhost/app:latest"}},
		{name: "Never, absent", image: "localhost/app:2", policy: v1.PullNever, wantReason: ErrImageNeverPull,
			wantMsg: `Container image "localhost/app:2" is not present with pull policy of Never`},
		{name: "invalid name", image: "localhost/App:1", policy: v1.PullIfNotPresent, wantReason: ErrInvalidImageName,
			wantMsg: `Failed to apply default image tag "localhost/App:1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			images := &fakeImages{present: map[string]*runtimeapi.Image{"localhost/busybox:1": present}}
			p := newTestPuller(t, images, 0, newFakeClock())
			c := testContainer("a")
			c.Image, c.ImagePullPolicy = tc.image, tc.policy
			got, err := p.ensureImage(context.Background(), testPod(), &c, nil)
			if tc.wantReason != nil {
				var re *reasonError
				if !errors.Is(err, tc.wantReason) || !errors.As(err, &re) || !strings.HasPrefix(re.message, tc.wantMsg) {
					t.Fatalf("ensureImage error %v, want %v with message %q", err, tc.wantReason, tc.wantMsg)
				}
				return
			}
			if err != nil || got.ref != tc.want {
				t.Fatalf("ensureImage = %q, %v; want %q", got.ref, err, tc.want)
			}
			if strings.Join(images.pulls, ",") != strings.Join(tc.wantPulls, ",") {
				t.Errorf("pulls %v, want %v", images.pulls, tc.wantPulls)
			}
		})
	}
}

func TestEnsureImageBackOff(t *testing.T) {
	clock := newFakeClock()
	images := &fakeImages{present: map[string]*runtimeapi.Image{}, pullErr: errors.New("rpc error: connection refused")}
	p := newTestPuller(t, images, 0, clock)
	c := testContainer("a")
	pod := testPod()

	_, err := p.ensureImage(context.Background(), pod, &c, nil)
	if !errors.Is(err, ErrImagePull) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("first pull: %v, want ErrImagePull with the runtime's error", err)
	}
	clock.advance(5 * time.Second)
	_, err = p.ensureImage(context.Background(), pod, &c, nil)
	var re *reasonError
	if !errors.Is(err, ErrImagePullBackOff) || !errors.As(err, &re) ||
		re.message != `Back-off pulling image "localhost/busybox:1": ErrImagePull: rpc error: connection refused` {
		t.Fatalf("pull within the backoff: %v, want ImagePullBackOff repeating the last error", err)
	}
	if len(images.pulls) != 1 {
		t.Errorf("pulled %d times during the backoff, want 1", len(images.pulls))
	}
	// Another pod has its own backoff.
	other := testPod(func(p *v1.Pod) { p.UID = "uid-2" })
	if _, err := p.ensureImage(context.Background(), other, &c, nil); !errors.Is(err, ErrImagePull) {
		t.Errorf("another pod's pull: %v, want a pull attempt", err)
	}

	clock.advance(5 * time.Second)
	images.pullErr = nil
	if img, err := p.ensureImage(context.Background(), pod, &c, nil); err != nil || img.ref == "" {
		t.Errorf("pull after the backoff: %q, %v", img.ref, err)
	}

	images.pullErr = errors.New(crierrors.ErrRegistryUnavailable.Error() + ": dial tcp: no route")
	c.ImagePullPolicy = v1.PullAlways
	pod.UID = "uid-3"
	_, err = p.ensureImage(context.Background(), pod, &c, nil)
	if !errors.Is(err, crierrors.ErrRegistryUnavailable) || !errors.As(err, &re) ||
		re.message != "image pull failed for localhost/busybox:1 because the registry is unavailable: dial tcp: no route" {
		t.Errorf("registry unavailable: %v", err)
	}
}

func TestPullParallelism(t *testing.T) {
	for _, tc := range []struct {
		maxParallel, pulls, want int
	}{
		{maxParallel: 0, pulls: 3, want: 1},
		{maxParallel: 1, pulls: 3, want: 1},
		{maxParallel: 2, pulls: 4, want: 2},
	} {
		images := &fakeImages{present: map[string]*runtimeapi.Image{}, block: make(chan struct{})}
		p := newTestPuller(t, images, tc.maxParallel, newFakeClock())
		var wg sync.WaitGroup
		for i := range tc.pulls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := testContainer("a")
				c.Image = "localhost/img:" + string(rune('a'+i))
				if _, err := p.ensureImage(context.Background(), testPod(), &c, nil); err != nil {
					t.Error(err)
				}
			}()
		}
		// Wait until as many pulls as allowed are in flight, then let all go.
		for {
			images.mu.Lock()
			n := images.active
			images.mu.Unlock()
			if n == tc.want {
				break
			}
			time.Sleep(time.Millisecond)
		}
		close(images.block)
		wg.Wait()
		if images.maxSeen != tc.want || len(images.pulls) != tc.pulls {
			t.Errorf("MaxParallelImagePulls %d: at most %d pulls at once of %d, want %d", tc.maxParallel, images.maxSeen, len(images.pulls), tc.want)
		}
	}
}

func TestPullCancelledWhileWaiting(t *testing.T) {
	images := &fakeImages{present: map[string]*runtimeapi.Image{}, block: make(chan struct{})}
	p := newTestPuller(t, images, 1, newFakeClock())
	first := make(chan error, 1)
	go func() {
		c := testContainer("a")
		c.Image = "localhost/first:1"
		_, err := p.ensureImage(context.Background(), testPod(), &c, nil)
		first <- err
	}()
	for {
		images.mu.Lock()
		n := images.active
		images.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := testContainer("b")
	c.Image = "localhost/second:1"
	if _, err := p.ensureImage(ctx, testPod(), &c, nil); !errors.Is(err, ErrImagePull) || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("a pull waiting for a slot with a cancelled context: %v", err)
	}
	close(images.block)
	if err := <-first; err != nil {
		t.Error(err)
	}
}

func TestImageUser(t *testing.T) {
	images := &fakeImages{present: map[string]*runtimeapi.Image{
		"sha256:uid":  {Id: "sha256:uid", Uid: &runtimeapi.Int64Value{Value: 1000}},
		"sha256:name": {Id: "sha256:name", Username: "nobody"},
		"sha256:root": {Id: "sha256:root"},
	}}
	p := newTestPuller(t, images, 0, newFakeClock())
	for ref, want := range map[string]string{"sha256:uid": "uid 1000", "sha256:name": "user nobody", "sha256:root": "uid 0"} {
		u, err := p.imageUser(context.Background(), readyImage{ref: ref})
		if err != nil {
			t.Fatal(err)
		}
		got := "user " + u.username
		if u.uid != nil {
			got = "uid " + strconv.FormatInt(*u.uid, 10)
		}
		if got != want {
			t.Errorf("imageUser(%s) = %s, want %s", ref, got, want)
		}
	}
}

// TestImageUserAfterEnsureImage: the user comes from the status ensureImage
// read, without another ImageStatus call; ensureImage reads the status once
// for an image present, and after a pull (for its size).
func TestImageUserAfterEnsureImage(t *testing.T) {
	for _, tc := range []struct {
		name         string
		image        string
		policy       v1.PullPolicy
		wantUser     string
		wantStatuses int
	}{
		{"present", "localhost/app:1", v1.PullIfNotPresent, "nobody", 1},
		{"absent, pulled", "localhost/other:1", v1.PullIfNotPresent, "", 2},
		{"pulled always", "localhost/app:1", v1.PullAlways, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			images := &fakeImages{present: map[string]*runtimeapi.Image{"localhost/app:1": {Id: "sha256:app", Username: "nobody"}}}
			p := newTestPuller(t, images, 0, newFakeClock())
			c := testContainer("a")
			c.Image, c.ImagePullPolicy = tc.image, tc.policy
			img, err := p.ensureImage(context.Background(), testPod(), &c, nil)
			if err != nil {
				t.Fatal(err)
			}
			u, err := p.imageUser(context.Background(), img)
			if err != nil {
				t.Fatal(err)
			}
			if u.username != tc.wantUser {
				t.Errorf("user %q, want %q", u.username, tc.wantUser)
			}
			if images.statuses != tc.wantStatuses {
				t.Errorf("%d ImageStatus calls, want %d", images.statuses, tc.wantStatuses)
			}
		})
	}
}
