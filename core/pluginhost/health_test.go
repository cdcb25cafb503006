package pluginhost

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
)

// scriptedHealth answers health checks from a script of statuses, then
// SERVING; it counts the checks.
type scriptedHealth struct {
	grpc_health_v1.UnimplementedHealthServer
	mu     sync.Mutex
	script []grpc_health_v1.HealthCheckResponse_ServingStatus
	checks int
}

func (s *scriptedHealth) Check(context.Context, *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks++
	status := grpc_health_v1.HealthCheckResponse_SERVING
	if len(s.script) > 0 {
		status, s.script = s.script[0], s.script[1:]
	}
	return &grpc_health_v1.HealthCheckResponse{Status: status}, nil
}

func (s *scriptedHealth) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checks
}

// healthProcess is a process whose connection reaches health, in-process.
func healthProcess(t *testing.T, health grpc_health_v1.HealthServer) *process {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "health.sock"))
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer()
	grpc_health_v1.RegisterHealthServer(server, health)
	go server.Serve(ln)
	t.Cleanup(server.Stop)
	conn, err := grpc.NewClient("unix://"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	pr, _ := fakeProcess("a")
	pr.conn = conn
	return pr
}

func TestWatchHealth(t *testing.T) {
	const (
		bad  = grpc_health_v1.HealthCheckResponse_NOT_SERVING
		good = grpc_health_v1.HealthCheckResponse_SERVING
	)
	tests := []struct {
		name       string
		script     []grpc_health_v1.HealthCheckResponse_ServingStatus
		wantChecks int // checks when the process is declared hung
	}{
		{"two failures in a row", []grpc_health_v1.HealthCheckResponse_ServingStatus{bad, bad}, 2},
		{"a success resets the count", []grpc_health_v1.HealthCheckResponse_ServingStatus{good, bad, good, bad, good, bad, bad}, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			health := &scriptedHealth{script: tt.script}
			pr := healthProcess(t, health)
			hung := make(chan error, 1)
			pr.watchHealth(time.Millisecond, time.Second, 2, func(err error, _ time.Duration) {
				hung <- err
			})
			err := <-hung // watchHealth returned after calling onHung
			if got := health.count(); got != tt.wantChecks {
				t.Errorf("declared hung after %d checks, want %d", got, tt.wantChecks)
			}
			if !strings.Contains(err.Error(), "2 health checks in a row failed") || !strings.Contains(err.Error(), "NOT_SERVING") {
				t.Errorf("reason %q does not say what failed", err)
			}
		})
	}
}

func TestWatchHealthEndsWithTheProcess(t *testing.T) {
	health := &scriptedHealth{}
	pr := healthProcess(t, health)
	returned := make(chan struct{})
	go func() {
		pr.watchHealth(time.Millisecond, time.Second, 2, func(error, time.Duration) { t.Error("a healthy process was declared hung") })
		close(returned)
	}()
	for health.count() < 3 { // let it check a few times
		time.Sleep(time.Millisecond)
	}
	pr.closeDone()
	<-returned
}

// A suspected process is checked at once, not at its next tick, and a
// failed check is repeated after the check's timeout: a hung plugin that a
// call found is declared so within seconds however long the period.
func TestWatchHealthChecksASuspectAtOnce(t *testing.T) {
	const bad = grpc_health_v1.HealthCheckResponse_NOT_SERVING
	health := &scriptedHealth{script: []grpc_health_v1.HealthCheckResponse_ServingStatus{bad, bad}}
	pr := healthProcess(t, health)
	hung := make(chan error, 1)
	go pr.watchHealth(time.Hour, 10*time.Millisecond, 2, func(err error, _ time.Duration) { hung <- err })
	pr.suspect()
	select {
	case <-hung:
	case <-time.After(30 * time.Second): // a bound, not a timing assertion: the period is an hour
		t.Fatalf("a suspected process failing its checks was not declared hung; %d checks", health.count())
	}
	if got := health.count(); got != 2 {
		t.Errorf("declared hung after %d checks, want 2", got)
	}
}
