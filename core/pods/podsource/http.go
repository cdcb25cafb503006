package podsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/podspec"
)

const (
	// DefaultHTTPCheckFrequency is http_check_frequency's default,
	// upstream's httpCheckFrequency.
	DefaultHTTPCheckFrequency = 20 * time.Second
	// httpTimeout is upstream's client timeout for the manifest URL.
	httpTimeout = 10 * time.Second
)

// HTTPConfig configures the static pod URL source.
type HTTPConfig struct {
	// URL is static_pod_url; it serves one Pod or a PodList.
	URL string
	// Header is static_pod_url_header, sent with every request.
	Header http.Header
	// CheckFrequency is http_check_frequency; 0 means the default.
	CheckFrequency time.Duration
	// NodeName names the pods (the URL alone seeds their UIDs, as upstream).
	NodeName string
}

// HTTP is the static pod URL source. It polls the URL; an unchanged body is
// skipped, an empty body is an empty set, and a failed fetch or a body that
// cannot be used keeps the last good set.
type HTTP struct {
	cfg    HTTPConfig
	client *http.Client
	log    hclog.Logger
	errors *prometheus.CounterVec
	// manifest is the URL as it appears in logs and metrics: without
	// credentials or query, which may carry tokens.
	manifest string

	// Owned by Run.
	body      []byte
	fetched   bool
	fetchErr  string
	bodyError bool
}

// NewHTTP makes the static pod URL source; metrics go to reg.
func NewHTTP(cfg HTTPConfig, log hclog.Logger, reg prometheus.Registerer) (*HTTP, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("static_pod_url %q: expected an http:// or https:// URL", cfg.URL)
	}
	if cfg.NodeName == "" {
		return nil, errors.New("http pod source: the node name is required")
	}
	if cfg.CheckFrequency == 0 {
		cfg.CheckFrequency = DefaultHTTPCheckFrequency
	}
	counter, err := registerManifestErrors(reg)
	if err != nil {
		return nil, err
	}
	shown := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	return &HTTP{
		cfg:      cfg,
		client:   &http.Client{Timeout: httpTimeout},
		log:      log.Named("podsource.http").With("url", shown.String()),
		errors:   counter,
		manifest: shown.String(),
	}, nil
}

// Name is "http".
func (h *HTTP) Name() string { return HTTPSource }

// Run fetches the URL at once and every CheckFrequency until ctx ends,
// sending the pods as an OpSet whenever the body changes.
func (h *HTTP) Run(ctx context.Context, out chan<- Update) {
	ticker := time.NewTicker(h.cfg.CheckFrequency)
	defer ticker.Stop()
	for {
		if !h.poll(ctx, out) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// poll fetches the URL once; it reports false when ctx ended.
func (h *HTTP) poll(ctx context.Context, out chan<- Update) bool {
	body, err := h.fetch(ctx)
	if ctx.Err() != nil {
		return false
	}
	h.reportFetch(err)
	if err != nil || (h.fetched && bytes.Equal(body, h.body)) {
		return true
	}
	h.body, h.fetched = body, true
	pods, err := h.load(body)
	if err != nil {
		h.bodyError = true
		h.errors.WithLabelValues(HTTPSource, h.manifest).Inc()
		h.log.Error("the static pod URL serves pods that cannot be used; the last good set keeps running", "error", err)
		return true
	}
	if h.bodyError {
		h.log.Info("the static pod URL serves usable pods again")
		h.bodyError = false
	}
	return send(ctx, out, Update{Source: HTTPSource, Op: OpSet, Pods: pods})
}

func (h *HTTP) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.cfg.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header = h.cfg.Header.Clone()
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", h.manifest, resp.Status)
	}
	body, err := podspec.ReadManifest(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the body of %s: %w", h.manifest, err)
	}
	return body, nil
}

// load turns a body into pods: none for an empty body, else every pod of
// the Pod or PodList, which must all be usable.
func (h *HTTP) load(body []byte) ([]*v1.Pod, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	m, err := podspec.DecodePodOrList(body)
	if err != nil {
		return nil, err
	}
	if len(m.Warnings) > 0 {
		h.log.Warn("the static pod URL serves fields that are ignored", "warnings", joinProblems(m.Warnings))
	}
	origin := podspec.URLOrigin(h.cfg.NodeName, h.cfg.URL)
	pods := make([]*v1.Pod, 0, len(m.Pods))
	var errs []error
	for i := range m.Pods {
		pod, err := m.Prepare(i, origin)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pods = append(pods, pod)
	}
	return pods, errors.Join(errs...)
}

// reportFetch logs a failing fetch when it starts or its reason changes,
// and its recovery, rather than every CheckFrequency.
func (h *HTTP) reportFetch(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg == h.fetchErr {
		return
	}
	if err != nil {
		h.log.Warn("cannot fetch the static pod URL; the last good set keeps running", "error", err)
	} else if h.fetchErr != "" {
		h.log.Info("the static pod URL can be fetched again")
	}
	h.fetchErr = msg
}
