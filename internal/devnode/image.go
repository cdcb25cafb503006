package devnode

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// Image is a container image that devnode builds in Go, as an OCI image
// layout, and imports into a node's containerd. BusyboxImage, PauseImage and
// FillerImage make the usual ones; anything else is a few Files.
type Image struct {
	// Ref names the image. It needs a registry host and a tag
	// ("localhost/app:1"): without a host containerd files it under
	// docker.io, where nothing can be pulled from here.
	Ref string
	// Layers are applied in order, the first one is the base.
	Layers []Layer

	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	User       string
	Labels     map[string]string
}

// Layer is one filesystem layer. Files is called when the image is built,
// so a layer may read the host (the busybox layer lists its applets then).
type Layer interface {
	Files() ([]File, error)
}

// FileLayer is a layer made of the files it lists, in that order. Parent
// directories that are not listed are added (mode 0755) in front of their
// first child.
type FileLayer []File

// Files returns the layer's files.
func (l FileLayer) Files() ([]File, error) { return l, nil }

// File is one entry of a layer.
type File struct {
	// Path is absolute and clean, e.g. "/bin/busybox".
	Path string
	// Mode holds the permission bits and, for a directory or a symlink,
	// fs.ModeDir or fs.ModeSymlink. A regular file with no permission bits
	// gets 0644, a directory 0755.
	Mode fs.FileMode
	// Link is a symlink's target.
	Link string
	// Content is a regular file's contents; nil is an empty file.
	Content Content
}

// Content is the contents of a regular file in a layer: Bytes, HostFile or
// Zeros.
type Content interface {
	// open returns the contents and their length.
	open() (io.ReadCloser, int64, error)
	// identity names the contents for the image cache: equal identities
	// mean equal bytes.
	identity() (string, error)
}

// Bytes is content held in memory.
func Bytes(b []byte) Content { return bytesContent(b) }

// HostFile is the content of a file on the host, read when the image is
// built.
func HostFile(path string) Content { return hostFileContent(path) }

// Zeros is n zero bytes, produced as the image is built without being held
// in memory.
func Zeros(n int64) Content { return zerosContent(n) }

type bytesContent []byte

func (b bytesContent) open() (io.ReadCloser, int64, error) {
	return io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil
}

func (b bytesContent) identity() (string, error) {
	sum := sha256.Sum256(b)
	return "bytes:" + hex.EncodeToString(sum[:]), nil
}

type hostFileContent string

func (p hostFileContent) open() (io.ReadCloser, int64, error) {
	f, err := os.Open(string(p))
	if err != nil {
		return nil, 0, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s is not a regular file", string(p))
	}
	return f, info.Size(), nil
}

func (p hostFileContent) identity() (string, error) {
	sum, err := fileSHA256(string(p))
	if err != nil {
		return "", err
	}
	return "sha256:" + sum, nil
}

type zerosContent int64

func (n zerosContent) open() (io.ReadCloser, int64, error) {
	if n < 0 {
		return nil, 0, fmt.Errorf("zero-filled content of %d bytes: want a size >= 0", int64(n))
	}
	return io.NopCloser(io.LimitReader(zeroReader{}, int64(n))), int64(n), nil
}

func (n zerosContent) identity() (string, error) { return fmt.Sprintf("zeros:%d", int64(n)), nil }

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// fileSHA256 returns the hex SHA-256 of a file's contents.
func fileSHA256(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// validate reports what is wrong with the image's description, before
// anything is built.
func (img Image) validate() error {
	host, rest, found := strings.Cut(img.Ref, "/")
	if !found || !(host == "localhost" || strings.ContainsAny(host, ".:")) {
		return fmt.Errorf("image ref %q: want a registry host in front, e.g. localhost/%s", img.Ref, img.Ref)
	}
	if _, tag, ok := strings.Cut(path.Base(rest), ":"); !ok || tag == "" {
		return fmt.Errorf("image ref %q: want a tag, e.g. %s:1", img.Ref, img.Ref)
	}
	if len(img.Layers) == 0 {
		return fmt.Errorf("image %s: want at least one layer", img.Ref)
	}
	return nil
}

// validate reports what is wrong with one layer entry.
func (f File) validate() error {
	if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
		return fmt.Errorf("file path %q: want an absolute, clean path below /", f.Path)
	}
	switch f.Mode.Type() {
	case 0:
		if f.Link != "" {
			return fmt.Errorf("file %s: a regular file has no link target (set fs.ModeSymlink for a symlink)", f.Path)
		}
	case fs.ModeDir:
		if f.Content != nil || f.Link != "" {
			return fmt.Errorf("file %s: a directory has neither content nor a link target", f.Path)
		}
	case fs.ModeSymlink:
		if f.Link == "" || f.Content != nil {
			return fmt.Errorf("file %s: a symlink needs a link target and no content", f.Path)
		}
	default:
		return fmt.Errorf("file %s: type %v is not supported (want a regular file, fs.ModeDir or fs.ModeSymlink)", f.Path, f.Mode.Type())
	}
	return nil
}

// perm returns the permission bits the entry gets in the layer.
func (f File) perm() fs.FileMode {
	if p := f.Mode.Perm() | f.Mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky); p != 0 {
		return p
	}
	switch f.Mode.Type() {
	case fs.ModeDir:
		return 0o755
	case fs.ModeSymlink:
		return 0o777
	}
	return 0o644
}
