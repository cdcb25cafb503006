package devnode

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/microlet/microlet/internal/devnode/images"
)

// busyboxPath is where Debian's busybox-static installs its binary.
const busyboxPath = "/bin/busybox"

// The images every node has.
const (
	DefaultPauseImage = "localhost/pause:1"
	DefaultTestImage  = "localhost/busybox:1"
)

// BusyboxImage is a small general-purpose image: the host's static busybox
// with every applet it lists as a symlink (sh, sleep, httpd, nc, wget, dd,
// ...), a world-writable /tmp and a root user. Its command is sh. It also
// holds /bin/grpchealth, a gRPC health server for gRPC probes
// (internal/devnode/images/grpchealth): busybox has none.
func BusyboxImage(ref string) Image {
	return Image{
		Ref:    ref,
		Layers: []Layer{busyboxLayer(busyboxPath), FileLayer{{Path: "/bin/grpchealth", Mode: 0o755, Content: grpcHealthProgram}}},
		Env:    []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Cmd:    []string{"sh"},
	}
}

// PauseImage is the sandbox image: one static program, /pause, that waits
// for SIGTERM or SIGINT and reaps zombies (internal/devnode/images/pause).
func PauseImage(ref string) Image {
	return Image{
		Ref:        ref,
		Layers:     []Layer{FileLayer{{Path: "/pause", Mode: 0o755, Content: pauseProgram}}},
		Entrypoint: []string{"/pause"},
	}
}

// FillerImage is an image of about sizeBytes, for image garbage collection
// tests: one layer holding a zero-filled file of sizeBytes (stored
// uncompressed) plus a few KiB of headers and metadata. The layer names the
// ref, so no two fillers share content and removing one frees its bytes.
// It has no program to run.
func FillerImage(ref string, sizeBytes int64) Image {
	return Image{
		Ref: ref,
		Layers: []Layer{FileLayer{
			{Path: "/filler/ref", Content: Bytes([]byte(ref + "\n"))},
			{Path: "/filler/data", Content: Zeros(sizeBytes)},
		}},
	}
}

// busyboxLayer is the layer of BusyboxImage, made from the busybox binary
// at the path it names.
type busyboxLayer string

func (b busyboxLayer) Files() ([]File, error) {
	bin := string(b)
	if err := checkStatic(bin); err != nil {
		return nil, err
	}
	out, err := exec.Command(bin, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("list the applets of %s: %w", bin, err)
	}
	files := []File{
		{Path: "/bin/busybox", Mode: 0o755, Content: HostFile(bin)},
		{Path: "/etc/passwd", Content: Bytes([]byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"))},
		{Path: "/etc/group", Content: Bytes([]byte("root:x:0:\nnobody:x:65534:\n"))},
		{Path: "/root", Mode: fs.ModeDir | 0o700},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	}
	scanner := bufio.NewScanner(bytes.NewReader(out))
	for scanner.Scan() {
		applet := "/" + strings.TrimSpace(scanner.Text())
		if applet == "/" || applet == "/bin/busybox" {
			continue
		}
		files = append(files, File{Path: applet, Mode: fs.ModeSymlink, Link: "/bin/busybox"})
	}
	return files, nil
}

// checkStatic fails unless bin is a statically linked executable: a dynamic
// one would find no libc inside the image.
func checkStatic(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("busybox for the test image: %w (install busybox-static)", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; the test image needs busybox-static's static binary", bin)
		}
	}
	return nil
}

// goProgram is the content of a program devnode bakes into an image: a
// static build of the package main source (internal/devnode/images),
// compiled on first use and cached.
type goProgram struct {
	name   string
	source []byte
}

var (
	pauseProgram      = goProgram{"pause", images.PauseSource}
	grpcHealthProgram = goProgram{"grpchealth", images.GRPCHealthSource}
)

func (p goProgram) identity() (string, error) {
	return p.name + ":" + p.buildKey(), nil
}

func (p goProgram) open() (io.ReadCloser, int64, error) {
	bin, err := p.build()
	if err != nil {
		return nil, 0, err
	}
	return hostFileContent(bin).open()
}

// buildKey names a build of the program: its source and target.
func (p goProgram) buildKey() string {
	sum := sha256.Sum256(p.source)
	return hex.EncodeToString(sum[:8]) + "-linux-" + runtime.GOARCH
}

// builds holds one build per program and process: a sync.OnceValues each.
var builds sync.Map

// build compiles the program once per process, reusing the binary in the
// cache directory when an earlier process built it.
func (p goProgram) build() (string, error) {
	once, _ := builds.LoadOrStore(p.name, sync.OnceValues(p.compile))
	return once.(func() (string, error))()
}

func (p goProgram) compile() (string, error) {
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, p.name, p.buildKey(), p.name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	src, err := os.MkdirTemp(filepath.Dir(bin), "src-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	if err := os.WriteFile(filepath.Join(src, "main.go"), p.source, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module "+p.name+"\n\ngo 1.24\n"), 0o644); err != nil {
		return "", err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building the %s program of the devnode images needs the Go toolchain on PATH: %w", p.name, err)
	}
	cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(src, p.name), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the %s program: %w: %s", p.name, err, out)
	}
	// Rename is atomic: a concurrent builder in another process loses
	// nothing but its work.
	if err := os.Rename(filepath.Join(src, p.name), bin); err != nil {
		return "", err
	}
	return bin, nil
}
