package devnode

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/microlet/microlet/internal/prereq"
)

// layout is an OCI image layout tar read back into memory.
type layout struct {
	files map[string][]byte
	index ocispec.Index
}

// readLayout parses a layout tar and checks what every consumer relies on:
// the oci-layout marker, and each blob's name and descriptor matching its
// bytes.
func readLayout(t *testing.T, data []byte) layout {
	t.Helper()
	l := layout{files: map[string][]byte{}}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read layout tar: %v", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		l.files[h.Name] = b
	}
	var marker ocispec.ImageLayout
	if err := json.Unmarshal(l.files[ocispec.ImageLayoutFile], &marker); err != nil || marker.Version != ocispec.ImageLayoutVersion {
		t.Fatalf("oci-layout = %q (%v), want version %s", l.files[ocispec.ImageLayoutFile], err, ocispec.ImageLayoutVersion)
	}
	for name, b := range l.files {
		if hexDigest, ok := strings.CutPrefix(name, "blobs/sha256/"); ok {
			if got := digest.FromBytes(b).Encoded(); got != hexDigest {
				t.Errorf("blob %s has digest %s", name, got)
			}
		}
	}
	l.index = decodeJSON[ocispec.Index](t, l.files[ocispec.ImageIndexFile])
	return l
}

// blob returns the bytes a descriptor points at, checking its size.
func (l layout) blob(t *testing.T, d ocispec.Descriptor) []byte {
	t.Helper()
	b, ok := l.files["blobs/sha256/"+d.Digest.Encoded()]
	if !ok {
		t.Fatalf("descriptor %s (%s) has no blob", d.Digest, d.MediaType)
	}
	if int64(len(b)) != d.Size {
		t.Fatalf("descriptor %s says %d bytes, blob has %d", d.Digest, d.Size, len(b))
	}
	return b
}

func decodeJSON[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %T from %q: %v", v, b, err)
	}
	return v
}

// layerEntry is what a test checks of one layer entry.
type layerEntry struct {
	typ  byte
	mode int64
	link string
	data string
}

func readLayer(t *testing.T, b []byte) (names []string, entries map[string]layerEntry) {
	t.Helper()
	entries = map[string]layerEntry{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, entries
		}
		if err != nil {
			t.Fatalf("read layer: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		entries[h.Name] = layerEntry{typ: h.Typeflag, mode: h.Mode, link: h.Linkname, data: string(data)}
	}
}

func buildLayoutBytes(t *testing.T, img Image) []byte {
	t.Helper()
	r, err := resolve(img)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeLayout(&buf, r, t.TempDir()); err != nil {
		t.Fatalf("writeLayout: %v", err)
	}
	return buf.Bytes()
}

func TestWriteLayout(t *testing.T) {
	img := Image{
		Ref: "localhost/app:2",
		Layers: []Layer{
			FileLayer{
				{Path: "/etc/hello", Content: Bytes([]byte("hello\n"))},
				{Path: "/bin/run", Mode: 0o755, Content: Bytes([]byte("#!/bin/sh\n"))},
				{Path: "/bin/sh", Mode: fs.ModeSymlink, Link: "run"},
				{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
			},
			FileLayer{{Path: "/var/lib/zeros", Content: Zeros(3000)}},
		},
		Entrypoint: []string{"/bin/run"},
		Cmd:        []string{"--flag"},
		Env:        []string{"A=b"},
		WorkingDir: "/tmp",
		Labels:     map[string]string{"team": "node"},
	}
	data := buildLayoutBytes(t, img)
	l := readLayout(t, data)

	if len(l.index.Manifests) != 1 {
		t.Fatalf("index has %d manifests, want 1", len(l.index.Manifests))
	}
	md := l.index.Manifests[0]
	if md.MediaType != ocispec.MediaTypeImageManifest {
		t.Errorf("index entry media type %q", md.MediaType)
	}
	if md.Annotations[annotationImageName] != img.Ref || md.Annotations[ocispec.AnnotationRefName] != "2" {
		t.Errorf("index annotations %v, want the name %s and the tag 2", md.Annotations, img.Ref)
	}
	if md.Platform == nil || md.Platform.OS != "linux" || md.Platform.Architecture != runtime.GOARCH {
		t.Errorf("index platform %+v, want linux/%s", md.Platform, runtime.GOARCH)
	}
	manifest := decodeJSON[ocispec.Manifest](t, l.blob(t, md))
	if manifest.SchemaVersion != 2 || manifest.Config.MediaType != ocispec.MediaTypeImageConfig {
		t.Errorf("manifest schema %d, config media type %q", manifest.SchemaVersion, manifest.Config.MediaType)
	}
	config := decodeJSON[ocispec.Image](t, l.blob(t, manifest.Config))
	tarPath := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(tarPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if id, err := layoutImageID(tarPath); err != nil || id != manifest.Config.Digest.String() {
		t.Errorf("layoutImageID = %q, %v; want the config digest %s", id, err, manifest.Config.Digest)
	}
	if got := config.Config; strings.Join(got.Entrypoint, " ") != "/bin/run" || strings.Join(got.Cmd, " ") != "--flag" ||
		strings.Join(got.Env, " ") != "A=b" || got.WorkingDir != "/tmp" || got.Labels["team"] != "node" || got.Labels[labelImageRef] != img.Ref {
		t.Errorf("image config %+v does not match the description", got)
	}
	if len(manifest.Layers) != 2 || len(config.RootFS.DiffIDs) != 2 {
		t.Fatalf("%d layers, %d diff IDs, want 2 and 2", len(manifest.Layers), len(config.RootFS.DiffIDs))
	}
	for i, d := range manifest.Layers {
		if d.MediaType != ocispec.MediaTypeImageLayer || config.RootFS.DiffIDs[i] != d.Digest {
			t.Errorf("layer %d: media type %q, digest %s, diff ID %s: want an uncompressed layer whose digest is its diff ID", i, d.MediaType, d.Digest, config.RootFS.DiffIDs[i])
		}
	}

	names, entries := readLayer(t, l.blob(t, manifest.Layers[0]))
	if got, want := strings.Join(names, " "), "etc/ etc/hello bin/ bin/run bin/sh tmp/"; got != want {
		t.Errorf("layer 0 entries %q, want %q (parents first)", got, want)
	}
	checks := map[string]layerEntry{
		"etc/":      {typ: tar.TypeDir, mode: 0o755},
		"etc/hello": {typ: tar.TypeReg, mode: 0o644, data: "hello\n"},
		"bin/run":   {typ: tar.TypeReg, mode: 0o755, data: "#!/bin/sh\n"},
		"bin/sh":    {typ: tar.TypeSymlink, mode: 0o777, link: "run"},
		"tmp/":      {typ: tar.TypeDir, mode: 0o1777},
	}
	for name, want := range checks {
		if got := entries[name]; got != want {
			t.Errorf("entry %s = %+v, want %+v", name, got, want)
		}
	}
	_, entries = readLayer(t, l.blob(t, manifest.Layers[1]))
	if got := entries["var/lib/zeros"].data; got != strings.Repeat("\x00", 3000) {
		t.Errorf("var/lib/zeros holds %d bytes, want 3000 zero bytes", len(got))
	}
}

func TestWriteLayoutIsReproducible(t *testing.T) {
	img := FillerImage("localhost/filler:1", 1<<10)
	if a, b := buildLayoutBytes(t, img), buildLayoutBytes(t, img); !bytes.Equal(a, b) {
		t.Error("two builds of the same image differ")
	}
}

func TestImageValidation(t *testing.T) {
	layer := FileLayer{{Path: "/a", Content: Bytes(nil)}}
	tests := []struct {
		name string
		img  Image
		want string
	}{
		{"no registry host", Image{Ref: "busybox:1", Layers: []Layer{layer}}, "want a registry host"},
		{"no tag", Image{Ref: "localhost/busybox", Layers: []Layer{layer}}, "want a tag"},
		{"no layer", Image{Ref: "localhost/busybox:1"}, "at least one layer"},
		{"relative path", Image{Ref: "localhost/x:1", Layers: []Layer{FileLayer{{Path: "a"}}}}, "absolute, clean path"},
		{"unclean path", Image{Ref: "localhost/x:1", Layers: []Layer{FileLayer{{Path: "/a/../b"}}}}, "absolute, clean path"},
		{"symlink without target", Image{Ref: "localhost/x:1", Layers: []Layer{FileLayer{{Path: "/a", Mode: fs.ModeSymlink}}}}, "needs a link target"},
		{"directory with content", Image{Ref: "localhost/x:1", Layers: []Layer{FileLayer{{Path: "/a", Mode: fs.ModeDir, Content: Bytes(nil)}}}}, "neither content"},
		{"device", Image{Ref: "localhost/x:1", Layers: []Layer{FileLayer{{Path: "/dev/x", Mode: fs.ModeDevice}}}}, "not supported"},
		{"duplicate", Image{Ref: "localhost/x:1", Layers: []Layer{FileLayer{{Path: "/a"}, {Path: "/a"}}}}, "listed twice"},
		{"directory after its contents", Image{Ref: "localhost/x:1", Layers: []Layer{FileLayer{{Path: "/d/a"}, {Path: "/d", Mode: fs.ModeDir}}}}, "list a directory before its contents"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := resolve(tt.img)
			if err == nil {
				err = writeLayout(io.Discard, r, t.TempDir())
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestImageKey(t *testing.T) {
	key := func(img Image) string {
		t.Helper()
		r, err := resolve(img)
		if err != nil {
			t.Fatal(err)
		}
		k, err := r.key()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := FillerImage("localhost/filler:1", 100)
	if key(base) != key(FillerImage("localhost/filler:1", 100)) {
		t.Error("equal descriptions have different keys")
	}
	for name, other := range map[string]Image{
		"ref":  FillerImage("localhost/filler:2", 100),
		"size": FillerImage("localhost/filler:1", 101),
		"cmd":  {Ref: base.Ref, Layers: base.Layers, Cmd: []string{"x"}},
	} {
		if key(base) == key(other) {
			t.Errorf("a different %s gives the same key", name)
		}
	}

	hostFile := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(hostFile, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := Image{Ref: "localhost/host:1", Layers: []Layer{FileLayer{{Path: "/bin/x", Content: HostFile(hostFile)}}}}
	before := key(img)
	if err := os.WriteFile(hostFile, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if key(img) == before {
		t.Error("a changed host file keeps its key")
	}
}

func TestBusyboxImage(t *testing.T) {
	if err := checkStatic(busyboxPath); err != nil {
		prereq.Missing(t, "no static busybox here: %v", err)
	}
	l := readLayout(t, buildLayoutBytes(t, BusyboxImage(DefaultTestImage)))
	manifest := decodeJSON[ocispec.Manifest](t, l.blob(t, l.index.Manifests[0]))
	config := decodeJSON[ocispec.Image](t, l.blob(t, manifest.Config))
	if strings.Join(config.Config.Cmd, " ") != "sh" {
		t.Errorf("Cmd %q, want sh", config.Config.Cmd)
	}
	_, entries := readLayer(t, l.blob(t, manifest.Layers[0]))
	want, err := os.ReadFile(busyboxPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := entries["bin/busybox"]; got.data != string(want) || got.mode != 0o755 {
		t.Errorf("bin/busybox: %d bytes mode %o, want the host's %d-byte binary, mode 755", len(got.data), got.mode, len(want))
	}
	for _, applet := range []string{"bin/sh", "bin/sleep", "usr/sbin/httpd", "usr/bin/nc", "usr/bin/wget", "bin/dd"} {
		if got := entries[applet]; got.typ != tar.TypeSymlink || got.link != "/bin/busybox" {
			t.Errorf("%s = %+v, want a symlink to /bin/busybox", applet, got)
		}
	}
	if got := entries["tmp/"]; got.mode != 0o1777 {
		t.Errorf("tmp mode %o, want 1777", got.mode)
	}
	if !strings.HasPrefix(entries["etc/passwd"].data, "root:x:0:0:") {
		t.Errorf("etc/passwd %q has no root user", entries["etc/passwd"].data)
	}
	_, entries = readLayer(t, l.blob(t, manifest.Layers[1]))
	expectStaticProgram(t, entries, "bin/grpchealth")
}

// expectStaticProgram checks that a layer holds an executable, static ELF
// binary at path.
func expectStaticProgram(t *testing.T, entries map[string]layerEntry, path string) {
	t.Helper()
	got := entries[path]
	if got.mode != 0o755 || !strings.HasPrefix(got.data, "\x7fELF") {
		t.Fatalf("%s: mode %o, %d bytes, want an executable ELF binary", path, got.mode, len(got.data))
	}
	bin := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(bin, []byte(got.data), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkStatic(bin); err != nil {
		t.Errorf("%s must be static: %v", path, err)
	}
}

func TestPauseImage(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		prereq.Missing(t, "building the pause program needs the go command")
	}
	l := readLayout(t, buildLayoutBytes(t, PauseImage(DefaultPauseImage)))
	manifest := decodeJSON[ocispec.Manifest](t, l.blob(t, l.index.Manifests[0]))
	_, entries := readLayer(t, l.blob(t, manifest.Layers[0]))
	expectStaticProgram(t, entries, "pause")
}
