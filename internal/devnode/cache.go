package devnode

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

const (
	// EnvCacheDir overrides where built images and the pause binary are
	// cached.
	EnvCacheDir = "DEVNODE_CACHE"

	// layoutVersion is part of every image's cache key: bump it when the
	// builder's output changes for the same description.
	layoutVersion = "1"
)

// cacheDir is $DEVNODE_CACHE, else .cache/devnode of the microlet
// checkout the process runs in (where CI keeps its caches), else the user's
// cache directory.
func cacheDir() (string, error) {
	if dir := os.Getenv(EnvCacheDir); dir != "" {
		return dir, nil
	}
	if root, err := RepoRoot(); err == nil {
		return filepath.Join(root, ".cache", "devnode"), nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for devnode images: set %s: %w", EnvCacheDir, err)
	}
	return filepath.Join(dir, "microlet", "devnode"), nil
}

// resolvedImage is an image with its layers' files listed.
type resolvedImage struct {
	Image
	files [][]File
}

func resolve(img Image) (resolvedImage, error) {
	if err := img.validate(); err != nil {
		return resolvedImage{}, err
	}
	r := resolvedImage{Image: img, files: make([][]File, len(img.Layers))}
	for i, l := range img.Layers {
		files, err := l.Files()
		if err != nil {
			return resolvedImage{}, fmt.Errorf("image %s: layer %d: %w", img.Ref, i, err)
		}
		r.files[i] = files
	}
	return r, nil
}

// key names the image's layout tar in the cache: equal keys mean equal
// tars. Host files are keyed by their contents' digest.
func (r resolvedImage) key() (string, error) {
	type entry struct {
		Path    string
		Mode    uint32
		Link    string
		Content string
	}
	layers := make([][]entry, len(r.files))
	for i, files := range r.files {
		for _, f := range files {
			e := entry{Path: f.Path, Mode: uint32(f.Mode), Link: f.Link}
			if f.Content != nil {
				id, err := f.Content.identity()
				if err != nil {
					return "", fmt.Errorf("image %s: file %s: %w", r.Ref, f.Path, err)
				}
				e.Content = id
			}
			layers[i] = append(layers[i], e)
		}
	}
	desc, err := json.Marshal(struct {
		Version, Arch, Ref, WorkingDir, User string
		Entrypoint, Cmd, Env                 []string
		Labels                               map[string]string
		Layers                               [][]entry
	}{layoutVersion, runtime.GOARCH, r.Ref, r.WorkingDir, r.User, r.Entrypoint, r.Cmd, r.Env, r.Labels, layers})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(desc)
	return hex.EncodeToString(sum[:]), nil
}

// archive is an image's OCI layout tar and the image ID (its config's
// digest) the CRI will report for it.
type archive struct {
	path, imageID string
}

// archiveEntry is one image's tar, built at most once per process.
type archiveEntry struct {
	once sync.Once
	archive
	err error
}

var (
	archivesMu sync.Mutex
	archives   = map[string]*archiveEntry{}
)

// imageArchive returns img's OCI layout tar in the cache directory,
// building it unless this or an earlier process already did.
func imageArchive(img Image) (archive, error) {
	r, err := resolve(img)
	if err != nil {
		return archive{}, err
	}
	key, err := r.key()
	if err != nil {
		return archive{}, err
	}
	archivesMu.Lock()
	e, ok := archives[key]
	if !ok {
		e = &archiveEntry{}
		archives[key] = e
	}
	archivesMu.Unlock()
	e.once.Do(func() {
		if e.path, e.err = buildArchive(r, key); e.err == nil {
			e.imageID, e.err = layoutImageID(e.path)
		}
	})
	return e.archive, e.err
}

func buildArchive(r resolvedImage, key string) (string, error) {
	root, err := cacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "images")
	final := filepath.Join(dir, sanitizeRef(r.Ref)+"-"+key[:16]+".tar")
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".build-*.tar")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err := writeLayout(w, r, dir); err != nil {
		tmp.Close()
		return "", fmt.Errorf("build image %s: %w", r.Ref, err)
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	// Rename is atomic: a concurrent builder in another process loses
	// nothing but its work.
	return final, os.Rename(tmp.Name(), final)
}

// sanitizeRef makes a ref readable as part of a file name.
func sanitizeRef(ref string) string {
	return strings.NewReplacer("/", "_", ":", "_", "@", "_").Replace(ref)
}
