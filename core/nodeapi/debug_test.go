package nodeapi

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/logging"
)

// gunzipped is a pprof profile's protobuf (profiles are gzipped).
func gunzipped(t *testing.T, body []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("not a gzipped profile (%d bytes): %v", len(body), err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestPprof(t *testing.T) {
	h := testHandlers(t, nil, &fakeRuntime{}, nil)
	for _, tc := range []struct {
		target string
		code   int
		// in is text the answer holds: a profile's sample type for the
		// binary profiles (gzipped protobuf), else the text itself.
		in      string
		profile bool
	}{
		{"/debug/pprof/", 200, "goroutine", false},
		{"/debug/pprof/heap", 200, "inuse_space", true},
		{"/debug/pprof/allocs", 200, "alloc_space", true},
		{"/debug/pprof/goroutine?debug=1", 200, "goroutine profile: total", false},
		{"/debug/pprof/block?debug=1", 200, "--- contention:", false},
		{"/debug/pprof/symbol", 200, "num_symbols: 1", false},
		{"/debug/pprof/profile?seconds=1", 200, "nanoseconds", true},
		{"/debug/pprof/nonesuch", 404, "Unknown profile", false},
	} {
		rec := h.do(t, "GET", tc.target, nil)
		body := rec.Body.Bytes()
		if rec.Code == 200 && tc.profile {
			body = gunzipped(t, body)
		}
		if rec.Code != tc.code || !bytes.Contains(body, []byte(tc.in)) {
			t.Errorf("GET %s = %d (%d bytes), want %d with %q", tc.target, rec.Code, len(body), tc.code, tc.in)
		}
	}
	if rec := h.do(t, "GET", "/debug/pprof/trace?seconds=0.01", nil); rec.Code != 200 || rec.Body.Len() == 0 ||
		rec.Header().Get("Content-Type") != "application/octet-stream" {
		t.Errorf("GET /debug/pprof/trace = %d, %d bytes of %q; want an execution trace", rec.Code, rec.Body.Len(), rec.Header().Get("Content-Type"))
	}
	if rec := h.do(t, "POST", "/debug/pprof/heap", nil); rec.Code != 405 {
		t.Errorf("POST /debug/pprof/heap = %d, want 405 (upstream serves GET only)", rec.Code)
	}
}

// TestPprofCmdline: the command line, as pprof serves it, without the
// credentials /configz hides.
func TestPprofCmdline(t *testing.T) {
	args := os.Args
	t.Cleanup(func() { os.Args = args })
	os.Args = []string{"/usr/bin/microlet", "--manifest-url=https://u:hunter2@pods.test/", "--manifest-url-header", "Authorization:Bearer t0ken", "--max-pods=5"}
	rec := testHandlers(t, nil, &fakeRuntime{}, nil).do(t, "GET", "/debug/pprof/cmdline", nil)
	want := "/usr/bin/microlet\x00--manifest-url=<redacted>\x00--manifest-url-header\x00<redacted>\x00--max-pods=5"
	if rec.Code != 200 || rec.Body.String() != want || rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("GET /debug/pprof/cmdline = %d %q (%s), want 200 %q", rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"), want)
	}
}

func TestDebugFlags(t *testing.T) {
	var out bytes.Buffer
	root, err := logging.New("info", false, &out)
	if err != nil {
		t.Fatal(err)
	}
	h := testHandlers(t, nil, &fakeRuntime{}, nil)
	h.log = root.Named("nodeapi") // as the agent gives it
	for _, tc := range []struct {
		method, body string
		code         int
		answer       string
		level        hclog.Level
	}{
		{"PUT", "4", 200, "successfully set the log level to debug (verbosity 4)", hclog.Debug},
		{"PUT", "0", 200, "successfully set the log level to info (verbosity 0)", hclog.Info},
		{"PUT", "3", 200, "successfully set the log level to info (verbosity 3)", hclog.Info},
		{"PUT", "5\n", 200, "successfully set the log level to trace (verbosity 5)", hclog.Trace},
		{"PUT", "10", 200, "successfully set the log level to trace (verbosity 10)", hclog.Trace},
		{"PUT", "debug", 400, `expected a klog verbosity, a whole number from 0 (such as 4 for debug), got "debug"`, hclog.Trace},
		{"PUT", "-1", 400, `got "-1"`, hclog.Trace},
		{"PUT", "", 400, `got ""`, hclog.Trace},
		{"PUT", "4294967296", 400, `got "4294967296"`, hclog.Trace},
		{"GET", "", 406, "unsupported http method", hclog.Trace},
		{"POST", "4", 406, "unsupported http method", hclog.Trace},
	} {
		rec := h.do(t, tc.method, "/debug/flags/v", strings.NewReader(tc.body))
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.answer) || rec.Header().Get("Content-Type") != "text/plain" {
			t.Errorf("%s /debug/flags/v %q = %d %q, want %d %q", tc.method, tc.body, rec.Code, rec.Body.String(), tc.code, tc.answer)
		}
		if got := root.GetLevel(); got != tc.level {
			t.Errorf("after %s %q the agent's level is %v, want %v", tc.method, tc.body, got, tc.level)
		}
	}
	if !strings.Contains(out.String(), "log level set: level=debug verbosity=4") {
		t.Errorf("the change of level was not logged:\n%s", out.String())
	}
}

// TestContentionProfiling: block profiling starts only where upstream
// starts it, with the profiling handler served on the secure port.
func TestContentionProfiling(t *testing.T) {
	t.Cleanup(func() { runtime.SetBlockProfileRate(0) })
	on := func(edit func(*config.Config)) *config.Config {
		c := config.Defaults()
		c.EnableContentionProfiling = true
		if edit != nil {
			edit(c)
		}
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  *config.Config
		want bool
	}{
		{"on", on(nil), true},
		{"off by default", config.Defaults(), false},
		{"profiling handler off", on(func(c *config.Config) { c.EnableProfilingHandler = false }), false},
		{"debugging handlers off", on(func(c *config.Config) { c.EnableDebuggingHandlers = false }), false},
		{"no secure port", on(func(c *config.Config) { c.Port = 0 }), false},
	} {
		runtime.SetBlockProfileRate(0)
		startContentionProfiling(tc.cfg)
		if got := recordsBlocking(); got != tc.want {
			t.Errorf("%s: blocking recorded %v, want %v", tc.name, got, tc.want)
		}
	}
}

// recordsBlocking reports whether the block profile records a blocked
// channel receive. A receive that did not block records nothing, so it
// tries a few times.
func recordsBlocking() bool {
	before := blockedReceives()
	for range 20 {
		blockOnReceive()
		if blockedReceives() > before {
			return true
		}
	}
	return false
}

// blockOnReceive waits for a channel that another goroutine closes later.
func blockOnReceive() {
	ch := make(chan struct{})
	go func() {
		time.Sleep(time.Millisecond)
		close(ch)
	}()
	<-ch
}

// blockedReceives counts blocking events in blockOnReceive in the block
// profile.
func blockedReceives() int64 {
	n, _ := runtime.BlockProfile(nil)
	records := make([]runtime.BlockProfileRecord, n+16)
	n, _ = runtime.BlockProfile(records)
	var count int64
	for _, r := range records[:n] {
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if strings.HasSuffix(f.Function, ".blockOnReceive") {
				count += r.Count
				break
			}
			if !more {
				break
			}
		}
	}
	return count
}

func TestLevelForVerbosity(t *testing.T) {
	for v, want := range map[uint64]hclog.Level{0: hclog.Info, 1: hclog.Info, 2: hclog.Info, 3: hclog.Info, 4: hclog.Debug,
		5: hclog.Trace, 6: hclog.Trace, 1 << 31: hclog.Trace} {
		if got := levelForVerbosity(v); got != want {
			t.Errorf("levelForVerbosity(%d) = %v, want %v", v, got, want)
		}
	}
}
