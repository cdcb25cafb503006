package devnode

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"runtime"
	"strings"
	"time"

	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

const (
	// annotationImageName is the index annotation containerd's importer
	// takes as the image's full name (images.AnnotationImageName).
	annotationImageName = "io.containerd.image.name"
	// labelImageRef carries the ref in the image config, so that every ref
	// gets an image ID of its own: containerd's CRI plugin loses track of a
	// name when a second name is imported for the same image ID.
	labelImageRef = "io.github.microlet.devnode.ref"
)

// epoch is the time stamp of every entry and of the config: builds are
// reproducible, so the same description is the same image ID.
var epoch = time.Unix(0, 0).UTC()

// blob is one file under blobs/sha256 of the layout: in memory, or staged in
// a temporary file (layers can be large).
type blob struct {
	desc ocispec.Descriptor
	data []byte
	path string
}

func newJSONBlob(mediaType string, v any) (blob, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return blob{}, err
	}
	return blob{desc: ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}, data: data}, nil
}

// writeLayout writes img as a tar of an OCI image layout, the format
// `ctr images import` reads. Layers are staged in tmpDir.
func writeLayout(w io.Writer, img resolvedImage, tmpDir string) error {
	layers := make([]blob, 0, len(img.files))
	diffIDs := make([]digest.Digest, 0, len(img.files))
	for i, files := range img.files {
		b, err := stageLayer(files, tmpDir)
		if err != nil {
			return fmt.Errorf("image %s: layer %d: %w", img.Ref, i, err)
		}
		defer os.Remove(b.path)
		layers = append(layers, b)
		// Layers are stored uncompressed: the digest is the diff ID.
		diffIDs = append(diffIDs, b.desc.Digest)
	}

	labels := maps.Clone(img.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[labelImageRef] = img.Ref
	platform := ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"}
	config, err := newJSONBlob(ocispec.MediaTypeImageConfig, ocispec.Image{
		Created:  &epoch,
		Platform: platform,
		Config: ocispec.ImageConfig{
			User:       img.User,
			Env:        img.Env,
			Entrypoint: img.Entrypoint,
			Cmd:        img.Cmd,
			WorkingDir: img.WorkingDir,
			Labels:     labels,
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: diffIDs},
	})
	if err != nil {
		return err
	}
	layerDescs := make([]ocispec.Descriptor, len(layers))
	for i, l := range layers {
		layerDescs[i] = l.desc
	}
	manifest, err := newJSONBlob(ocispec.MediaTypeImageManifest, ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    config.desc,
		Layers:    layerDescs,
	})
	if err != nil {
		return err
	}
	manifestDesc := manifest.desc
	manifestDesc.Platform = &platform
	_, tag, _ := strings.Cut(path.Base(img.Ref), ":")
	manifestDesc.Annotations = map[string]string{
		annotationImageName:       img.Ref,
		ocispec.AnnotationRefName: tag,
	}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifestDesc},
	})
	if err != nil {
		return err
	}
	ociLayout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(tarHeader(dir, tar.TypeDir, 0o755, 0)); err != nil {
			return err
		}
	}
	if err := writeTarFile(tw, ocispec.ImageLayoutFile, ociLayout); err != nil {
		return err
	}
	if err := writeTarFile(tw, ocispec.ImageIndexFile, index); err != nil {
		return err
	}
	written := map[digest.Digest]bool{}
	for _, b := range append([]blob{config, manifest}, layers...) {
		if written[b.desc.Digest] {
			continue
		}
		written[b.desc.Digest] = true
		if err := writeBlob(tw, b); err != nil {
			return err
		}
	}
	return tw.Close()
}

// stageLayer writes a layer's tar to a temporary file, digesting it on the way.
func stageLayer(files []File, tmpDir string) (blob, error) {
	f, err := os.CreateTemp(tmpDir, "layer-*.tar")
	if err != nil {
		return blob{}, err
	}
	defer f.Close()
	digester := digest.Canonical.Digester()
	if err := writeLayerTar(io.MultiWriter(f, digester.Hash()), files); err != nil {
		os.Remove(f.Name())
		return blob{}, err
	}
	info, err := f.Stat()
	if err != nil {
		os.Remove(f.Name())
		return blob{}, err
	}
	return blob{
		desc: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digester.Digest(), Size: info.Size()},
		path: f.Name(),
	}, f.Close()
}

// writeLayerTar writes the entries of one layer, each directory before what
// it contains.
func writeLayerTar(w io.Writer, files []File) error {
	tw := tar.NewWriter(w)
	written := map[string]bool{}
	for _, f := range files {
		if err := f.validate(); err != nil {
			return err
		}
		if written[f.Path] {
			return fmt.Errorf("file %s: listed twice, or listed after an entry inside it (list a directory before its contents)", f.Path)
		}
		for _, dir := range parentDirs(f.Path) {
			if written[dir] {
				continue
			}
			written[dir] = true
			if err := tw.WriteHeader(tarHeader(strings.TrimPrefix(dir, "/")+"/", tar.TypeDir, 0o755, 0)); err != nil {
				return err
			}
		}
		written[f.Path] = true
		if err := writeLayerEntry(tw, f); err != nil {
			return fmt.Errorf("file %s: %w", f.Path, err)
		}
	}
	return tw.Close()
}

func writeLayerEntry(tw *tar.Writer, f File) error {
	name := strings.TrimPrefix(f.Path, "/")
	mode := tarMode(f.perm())
	switch f.Mode.Type() {
	case fs.ModeDir:
		return tw.WriteHeader(tarHeader(name+"/", tar.TypeDir, mode, 0))
	case fs.ModeSymlink:
		h := tarHeader(name, tar.TypeSymlink, mode, 0)
		h.Linkname = f.Link
		return tw.WriteHeader(h)
	}
	content := f.Content
	if content == nil {
		content = Bytes(nil)
	}
	r, size, err := content.open()
	if err != nil {
		return err
	}
	defer r.Close()
	if err := tw.WriteHeader(tarHeader(name, tar.TypeReg, mode, size)); err != nil {
		return err
	}
	_, err = io.Copy(tw, r)
	return err
}

// parentDirs returns the directories above p, outermost first:
// "/a/b/c" gives "/a", "/a/b".
func parentDirs(p string) []string {
	var dirs []string
	for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
		dirs = append(dirs, dir)
	}
	for i, j := 0, len(dirs)-1; i < j; i, j = i+1, j-1 {
		dirs[i], dirs[j] = dirs[j], dirs[i]
	}
	return dirs
}

// tarMode converts permission bits to the tar header's mode field.
func tarMode(perm fs.FileMode) int64 {
	mode := int64(perm.Perm())
	if perm&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if perm&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if perm&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}

func tarHeader(name string, typ byte, mode, size int64) *tar.Header {
	return &tar.Header{
		Typeflag: typ,
		Name:     name,
		Mode:     mode,
		Size:     size,
		ModTime:  epoch,
		Uname:    "root",
		Gname:    "root",
		Format:   tar.FormatPAX,
	}
}

func writeTarFile(tw *tar.Writer, name string, data []byte) error {
	if err := tw.WriteHeader(tarHeader(name, tar.TypeReg, 0o644, int64(len(data)))); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

func writeBlob(tw *tar.Writer, b blob) error {
	name := "blobs/sha256/" + b.desc.Digest.Encoded()
	if b.path == "" {
		return writeTarFile(tw, name, b.data)
	}
	f, err := os.Open(b.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(tarHeader(name, tar.TypeReg, 0o644, b.desc.Size)); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// layoutImageID reads the image ID (the config's digest) from a layout tar
// of one image. Layers are skipped unread.
func layoutImageID(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	small := map[string][]byte{} // index.json and the JSON blobs
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", path, err)
		}
		if h.Typeflag != tar.TypeReg || h.Size > 1<<20 {
			continue
		}
		if small[h.Name], err = io.ReadAll(tr); err != nil {
			return "", fmt.Errorf("read %s: %w", path, err)
		}
	}
	var index ocispec.Index
	if err := json.Unmarshal(small[ocispec.ImageIndexFile], &index); err != nil || len(index.Manifests) != 1 {
		return "", fmt.Errorf("%s: want an index of one manifest (%v)", path, err)
	}
	var manifest ocispec.Manifest
	if err := json.Unmarshal(small["blobs/sha256/"+index.Manifests[0].Digest.Encoded()], &manifest); err != nil {
		return "", fmt.Errorf("%s: manifest: %w", path, err)
	}
	return manifest.Config.Digest.String(), nil
}
