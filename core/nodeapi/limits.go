package nodeapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"k8s.io/apimachinery/pkg/util/httpstream"
)

// maxBodyBytes bounds a request's body: the node API takes at most a small
// form (POST /stats/summary); commands and options travel in the query.
const maxBodyBytes = 64 << 10

// limitRequests answers 413 to a request whose body is larger than
// maxBodyBytes, declared or sent, before any handler reads it. Upgrades
// carry no body: their streams follow the handshake.
func limitRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxBodyBytes {
			tooLarge(w, r.ContentLength)
			return
		}
		if r.Body != nil && r.Body != http.NoBody && !httpstream.IsUpgradeRequest(r) {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
			if err != nil {
				http.Error(w, fmt.Sprintf("reading the request body: %v", err), http.StatusBadRequest)
				return
			}
			if len(body) > maxBodyBytes {
				tooLarge(w, -1)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}

func tooLarge(w http.ResponseWriter, size int64) {
	msg := fmt.Sprintf("request body is larger than the node API takes (%d bytes)", maxBodyBytes)
	if size >= 0 {
		msg = fmt.Sprintf("request body of %d bytes is larger than the node API takes (%d bytes)", size, maxBodyBytes)
	}
	http.Error(w, msg, http.StatusRequestEntityTooLarge)
}
