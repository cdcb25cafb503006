package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListImages lists the images that match filter (nil: all).
func (c *Client) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.images.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: filter})
	if err != nil {
		return nil, c.wrapImage("ListImages", "", err)
	}
	return resp.Images, nil
}

// ImageStatus returns an image's status; the response's Image is nil when
// the image is not present.
func (c *Client) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: image, Verbose: verbose})
	if err != nil {
		return nil, c.wrapImage("ImageStatus", image.GetImage(), err)
	}
	return resp, nil
}

// PullImage pulls an image and returns its reference (digest). It has its
// own deadline, ImagePullTimeout, not the request timeout.
func (c *Client) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ImagePullTimeout)
	defer cancel()
	resp, err := c.images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: sandboxConfig})
	if err != nil {
		return "", c.wrapImage("PullImage", image.GetImage(), err)
	}
	return resp.ImageRef, nil
}

// RemoveImage removes an image; removing an absent image succeeds.
func (c *Client) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	_, err := c.images.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: image})
	return c.wrapImage("RemoveImage", image.GetImage(), err)
}

// ImageFsInfo returns the usage of the filesystems images are stored on.
func (c *Client) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return nil, c.wrapImage("ImageFsInfo", "", err)
	}
	return resp, nil
}
