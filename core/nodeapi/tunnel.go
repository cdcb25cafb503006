package nodeapi

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	constants "k8s.io/apimachinery/pkg/util/portforward"
	"k8s.io/client-go/tools/portforward"
)

// WebSocket port-forward. client-go's (kubectl's) port-forward over
// WebSocket tunnels SPDY inside the WebSocket: it asks for the subprotocol
// "SPDY/3.1+portforward.k8s.io" and then speaks plain SPDY port-forward in
// binary messages. The API server unwraps the tunnel and speaks SPDY to
// the kubelet (KEP-4006); runtimes do not know the tunnel. So microlet
// unwraps it too: it opens the SPDY upgrade to the runtime's streaming
// server first, upgrades the client's WebSocket with the protocol the
// runtime chose, and splices the tunnel's bytes with the runtime's
// connection. The SPDY session itself runs between the client and the
// runtime, untouched.

// isTunnelRequest says whether a request asks for SPDY tunnelled in a
// WebSocket.
func isTunnelRequest(r *http.Request) bool {
	return len(tunnelProtocols(r)) > 0
}

// tunnelProtocols are the SPDY protocols the client offers through the
// tunnel, each "<SPDY/3.1+>...<.k8s.io>" without the prefix.
func tunnelProtocols(r *http.Request) []string {
	if !websocket.IsWebSocketUpgrade(r) {
		return nil
	}
	var out []string
	for _, p := range websocket.Subprotocols(r) {
		if rest, ok := strings.CutPrefix(p, constants.WebsocketsSPDYTunnelingPrefix); ok && strings.HasSuffix(rest, constants.KubernetesSuffix) {
			out = append(out, rest)
		}
	}
	return out
}

// tunnelPortForward serves a tunnelled port-forward by the runtime's SPDY
// stream at location. If the runtime refuses the upgrade, the client gets
// the runtime's answer and no WebSocket.
func tunnelPortForward(w http.ResponseWriter, r *http.Request, location *url.URL, log hclog.Logger) {
	protocols := tunnelProtocols(r)
	backend, chosen, err := dialSPDY(r, location, protocols)
	if err != nil {
		var refused *refusedUpgrade
		if errors.As(err, &refused) {
			http.Error(w, refused.body, refused.code)
			return
		}
		streamingError(w, err)
		return
	}
	defer backend.Close()
	upgrader := websocket.Upgrader{
		Subprotocols: []string{constants.WebsocketsSPDYTunnelingPrefix + chosen},
		// The caller is authenticated and authorized; browsers' origin
		// checks do not apply to this API.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		log.Debug("port-forward tunnel: the WebSocket upgrade failed", "path", r.URL.Path, "error", err)
		return // the upgrader answered the client
	}
	tunnel := portforward.NewTunnelingConnection("server", ws)
	defer tunnel.Close()
	splice(tunnel, backend)
}

// backendConn is the runtime's connection after the upgrade, with what was
// read past the response already buffered.
type backendConn struct {
	net.Conn
	in *bufio.Reader
}

func (c backendConn) Read(p []byte) (int, error) { return c.in.Read(p) }

// refusedUpgrade is the runtime's answer when it did not switch protocols.
type refusedUpgrade struct {
	code int
	body string
}

func (e *refusedUpgrade) Error() string { return "the runtime refused the upgrade: " + e.body }

// dialSPDY asks the runtime's streaming server at location for an SPDY
// upgrade offering protocols, and returns the connection and the protocol
// it chose.
func dialSPDY(r *http.Request, location *url.URL, protocols []string) (net.Conn, string, error) {
	rt, err := spdy.NewRoundTripper(nil)
	if err != nil {
		return nil, "", err
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, location.String(), nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set(httpstream.HeaderConnection, httpstream.HeaderUpgrade)
	req.Header.Set(httpstream.HeaderUpgrade, spdy.HeaderSpdy31)
	for _, p := range protocols {
		req.Header.Add(httpstream.HeaderProtocolVersion, p)
	}
	conn, err := rt.Dial(req)
	if err != nil {
		return nil, "", err
	}
	in := bufio.NewReader(conn)
	resp, err := http.ReadResponse(in, req)
	if err != nil {
		conn.Close()
		return nil, "", err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		conn.Close()
		return nil, "", &refusedUpgrade{code: resp.StatusCode, body: strings.TrimSpace(string(body))}
	}
	return backendConn{Conn: conn, in: in}, resp.Header.Get(httpstream.HeaderProtocolVersion), nil
}

// splice copies both ways until either side ends, then closes both.
func splice(a, b net.Conn) {
	var once sync.Once
	done := make(chan struct{})
	closeBoth := func() {
		once.Do(func() {
			a.Close()
			b.Close()
			close(done)
		})
	}
	go func() {
		_, _ = io.Copy(a, b)
		closeBoth()
	}()
	go func() {
		_, _ = io.Copy(b, a)
		closeBoth()
	}()
	<-done
}
