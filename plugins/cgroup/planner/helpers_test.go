package planner

import (
	"testing"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
)

const (
	Mi = int64(1) << 20
	Gi = int64(1) << 30
)

// rl builds a resource list from name/quantity pairs: rl("cpu", "250m", "memory", "1Gi").
func rl(t testing.TB, pairs ...string) *typesv1.ResourceList {
	t.Helper()
	if len(pairs)%2 != 0 {
		t.Fatalf("rl: odd number of arguments %q", pairs)
	}
	a := amounts{}
	for i := 0; i < len(pairs); i += 2 {
		q, err := sdk.ParseQuantity(pairs[i+1])
		if err != nil {
			t.Fatalf("rl: %s: %v", pairs[i], err)
		}
		if pairs[i] == resourceCPU {
			a[pairs[i]] = q.MilliValue()
		} else {
			a[pairs[i]] = q.Value()
		}
	}
	return a.list()
}

// ctr is a container with requests and limits (nil for none).
func ctr(name string, requests, limits *typesv1.ResourceList) *typesv1.Container {
	c := &typesv1.Container{Name: name}
	if requests != nil || limits != nil {
		c.Resources = &typesv1.Resources{Requests: requests, Limits: limits}
	}
	return c
}

// sidecar is a restartable init container.
func sidecar(name string, requests, limits *typesv1.ResourceList) *typesv1.Container {
	c := ctr(name, requests, limits)
	c.Restartable = true
	return c
}

func pod(uid string, containers ...*typesv1.Container) *typesv1.Pod {
	return &typesv1.Pod{Uid: uid, Namespace: "default", Name: "pod-" + uid, Containers: containers}
}

func withInit(p *typesv1.Pod, init ...*typesv1.Container) *typesv1.Pod {
	p.InitContainers = init
	return p
}

func withPodResources(p *typesv1.Pod, requests, limits *typesv1.ResourceList) *typesv1.Pod {
	p.PodResources = &typesv1.Resources{Requests: requests, Limits: limits}
	return p
}

func defaultConfig(t testing.TB, edit func(*Config)) *Config {
	t.Helper()
	var cfg Config
	cfg.SetDefaults()
	if edit != nil {
		edit(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("invalid test config: %v", err)
	}
	return &cfg
}

func ptr[T any](v T) *T { return &v }
