package podruntime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/cluster/events/eventstest"
	"github.com/microlet/microlet/core/pods/pullcreds"
)

// fixedCreds answers every lookup with the same credentials and records
// the images asked for.
type fixedCreds struct {
	found  pullcreds.Credentials
	images []string
}

func (f *fixedCreds) Lookup(_ context.Context, _ *v1.Pod, image string) pullcreds.Credentials {
	f.images = append(f.images, image)
	return f.found
}

func TestPullTriesEachCredential(t *testing.T) {
	unauthorized := errors.New("failed to resolve reference: 401 Unauthorized")
	creds := &fixedCreds{found: pullcreds.Credentials{
		Auths:         []pullcreds.AuthConfig{{Username: "wrong", Password: "x"}, {Username: "right", Password: "y"}},
		FailedSecrets: []string{"gone", "also-gone"},
	}}
	images := &fakeImages{present: map[string]*runtimeapi.Image{}, authErrs: map[string]error{"wrong": unauthorized}}
	met, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(20)
	p := newImagePuller(images, creds, rec, 1, newFakeClock().Now, met, hclog.NewNullLogger())
	c := testContainer("a")
	c.Image = "reg.example.com:5000/team/app:1"
	if _, err := p.ensureImage(context.Background(), testPod(), &c, nil); err != nil {
		t.Fatalf("ensureImage: %v", err)
	}
	if strings.Join(creds.images, ",") != "reg.example.com:5000/team/app" {
		t.Errorf("credentials looked up for %v, want the repository without its tag", creds.images)
	}
	if strings.Join(images.auths, ",") != "wrong,right" {
		t.Errorf("pulls with %v, want wrong then right", images.auths)
	}
	evs := strings.Join(eventstest.Drain(rec), "\n")
	if !strings.Contains(evs, "Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (gone, also-gone); attempting to pull the image may not succeed.") {
		t.Errorf("events:\n%s\nwant FailedToRetrieveImagePullSecret", evs)
	}

	// Every credential failing: ErrImagePull with each failure.
	images.authErrs["right"] = errors.New("failed to resolve reference: 403 Forbidden")
	c.Image = "reg.example.com:5000/team/app:2"
	_, err = p.ensureImage(context.Background(), testPod(), &c, nil)
	var re *reasonError
	if !errors.Is(err, ErrImagePull) || !errors.As(err, &re) || re.message != "[failed to resolve reference: 401 Unauthorized, failed to resolve reference: 403 Forbidden]" {
		t.Errorf("ensureImage error %v, want ErrImagePull with both registries' messages", err)
	}
}

func TestRuntimePullError(t *testing.T) {
	pull := status.Error(codes.Unknown, "failed to pull and unpack image: 401 Unauthorized")
	down := status.Error(codes.Unavailable, "connection refused")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("CRI PullImage %q: %w", "reg/app:1", pull), "rpc error: code = Unknown desc = failed to pull and unpack image: 401 Unauthorized"},
		{fmt.Errorf("CRI PullImage: the container runtime is unavailable: %w", down), "CRI PullImage: the container runtime is unavailable: rpc error: code = Unavailable desc = connection refused"},
		{errors.New("plain"), "plain"},
	} {
		if got := runtimePullError(tc.err).Error(); got != tc.want {
			t.Errorf("runtimePullError(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
