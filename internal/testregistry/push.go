package testregistry

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/microlet/microlet/internal/devnode"
)

// Push builds img as devnode does and pushes it as repo:tag ("e2e/app:1")
// with the distribution API (blobs, then the manifest), authenticating as
// user with password: the registry's htpasswd takes HTTP basic
// credentials on every request.
func (r *Registry) Push(ctx context.Context, img devnode.Image, repoTag, user, password string) error {
	repo, tag, ok := strings.Cut(repoTag, ":")
	if !ok {
		return fmt.Errorf("push %q: want repository:tag", repoTag)
	}
	layout, err := devnode.ImageLayout(img)
	if err != nil {
		return err
	}
	blobs, err := readLayout(layout)
	if err != nil {
		return fmt.Errorf("read the layout of %s: %w", img.Ref, err)
	}
	var index ocispec.Index
	if err := json.Unmarshal(blobs["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		return fmt.Errorf("layout of %s: want an index of one manifest: %v", img.Ref, err)
	}
	desc := index.Manifests[0]
	manifestData := blobs[desc.Digest.String()]
	var manifest ocispec.Manifest
	if err := json.Unmarshal(manifestData, &manifest); err != nil {
		return fmt.Errorf("layout of %s: manifest: %w", img.Ref, err)
	}
	for _, b := range append([]ocispec.Descriptor{manifest.Config}, manifest.Layers...) {
		data, ok := blobs[b.Digest.String()]
		if !ok {
			return fmt.Errorf("layout of %s: no blob %s", img.Ref, b.Digest)
		}
		if err := r.pushBlob(ctx, repo, b.Digest.String(), data, user, password); err != nil {
			return err
		}
	}
	_, err = r.do(ctx, http.MethodPut, "/v2/"+repo+"/manifests/"+tag, desc.MediaType, manifestData, user, password, http.StatusCreated)
	return err
}

// pushBlob uploads a blob unless the repository has it: a POST opens the
// upload, a PUT with the digest completes it.
func (r *Registry) pushBlob(ctx context.Context, repo, digest string, data []byte, user, password string) error {
	if _, err := r.do(ctx, http.MethodHead, "/v2/"+repo+"/blobs/"+digest, "", nil, user, password, http.StatusOK); err == nil {
		return nil
	}
	resp, err := r.do(ctx, http.MethodPost, "/v2/"+repo+"/blobs/uploads/", "", nil, user, password, http.StatusAccepted)
	if err != nil {
		return err
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return fmt.Errorf("upload location: %w", err)
	}
	q := loc.Query()
	q.Set("digest", digest)
	loc.RawQuery = q.Encode()
	target := loc.RequestURI()
	_, err = r.do(ctx, http.MethodPut, target, "application/octet-stream", data, user, password, http.StatusCreated)
	return err
}

// do sends one request and checks its status; the error of another has
// the registry's answer.
func (r *Registry) do(ctx context.Context, method, uri, contentType string, body []byte, user, password string, want int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "https://"+r.Host+uri, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", ocispec.MediaTypeImageManifest)
	req.SetBasicAuth(user, password)
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %s: %s", method, uri, resp.Status, bytes.TrimSpace(msg))
	}
	return resp, nil
}

// readLayout reads an OCI layout tar: index.json under its name, blobs
// under their digests.
func readLayout(file string) (map[string][]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		switch dir, name := path.Split(h.Name); dir {
		case "":
			out[name] = data
		case "blobs/sha256/":
			out["sha256:"+name] = data
		}
	}
}
