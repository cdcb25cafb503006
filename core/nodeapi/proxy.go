package nodeapi

import (
	"net/http"
	"net/url"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/util/proxy"
)

// proxyStream proxies an upgraded request (SPDY, or WebSocket the runtime
// speaks) to the runtime's streaming server, upstream's proxyStream: the
// upgrade is required, and the connections are spliced once the runtime
// switched protocols.
func proxyStream(w http.ResponseWriter, r *http.Request, location *url.URL, log hclog.Logger) {
	handler := proxy.NewUpgradeAwareHandler(location, nil, false, true, proxyErrors{log})
	handler.ServeHTTP(w, r)
}

// proxyErrors answers a failed proxy as upstream's responder: 500 with
// the error.
type proxyErrors struct{ log hclog.Logger }

func (p proxyErrors) Error(w http.ResponseWriter, r *http.Request, err error) {
	p.log.Error("error while proxying a stream to the runtime", "path", r.URL.Path, "error", err)
	http.Error(w, err.Error(), http.StatusInternalServerError)
}
