package sdktest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

// builds holds one build per package for the life of the test binary.
var builds = struct {
	sync.Mutex
	byPackage map[string]*build
}{byPackage: map[string]*build{}}

type build struct {
	once sync.Once
	// binary is the first build, kept open: its content outlives the temp
	// dir of the test that built it, and later tests copy from it.
	binary *os.File
	err    error
}

// Build compiles the plugin main package pkg (as `go build` takes it: an
// import path or a ./relative directory) as a release would
// (CGO_ENABLED=0, -trimpath) and returns the path of the binary, mode 0755,
// in the calling test's t.TempDir(), named after the package's directory
// (microlet-<kind>-<name>). It compiles once per package per test binary;
// later calls get a copy of that build.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	return BuildAs(t, pkg, binaryName(pkg))
}

// BuildAs is Build with the binary named name: for a main package that
// serves several plugins and picks one by the name it runs under, as
// microlet's built-in plugins do.
func BuildAs(t testing.TB, pkg, name string) string {
	t.Helper()
	builds.Lock()
	b, ok := builds.byPackage[pkg]
	if !ok {
		b = &build{}
		builds.byPackage[pkg] = b
	}
	builds.Unlock()

	var built string
	b.once.Do(func() { built, b.binary, b.err = goBuild(t, pkg) })
	if b.err != nil {
		t.Fatalf("sdktest: %v", b.err)
	}
	if built != "" && filepath.Base(built) == name {
		return built
	}
	return b.copyTo(t, name)
}

func goBuild(t testing.TB, pkg string) (string, *os.File, error) {
	out := filepath.Join(t.TempDir(), binaryName(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("go build %s: %v\n%s", pkg, err, output)
	}
	// 0755 whatever the umask: what a plugin directory holds.
	if err := os.Chmod(out, 0o755); err != nil {
		return "", nil, err
	}
	f, err := os.Open(out)
	if err != nil {
		return "", nil, err
	}
	return out, f, nil
}

// copyTo copies the build into t.TempDir() as an executable named name.
func (b *build) copyTo(t testing.TB, name string) string {
	t.Helper()
	info, err := b.binary.Stat()
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	out := filepath.Join(t.TempDir(), name)
	dst, err := os.OpenFile(out, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	_, err = io.Copy(dst, io.NewSectionReader(b.binary, 0, info.Size()))
	if err == nil {
		err = dst.Chmod(0o755) // whatever the umask
	}
	if closeErr := dst.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		t.Fatalf("sdktest: copy the build of %s: %v", name, err)
	}
	return out
}

// binaryName is the last element of pkg, or of its absolute directory when
// pkg is "." or "..".
func binaryName(pkg string) string {
	name := path.Base(filepath.ToSlash(pkg))
	if name == "." || name == ".." || name == "/" {
		if abs, err := filepath.Abs(pkg); err == nil {
			name = filepath.Base(abs)
		}
	}
	return name
}
