package auth

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/hashicorp/go-hclog"
)

// Filter authenticates and authorizes every request before next sees it,
// answering as the kubelet's auth filter does: 401 "Unauthorized" without
// good credentials, 403 "Forbidden (user=..., verb=..., resource=nodes,
// subresource(s)=[...])" when no subresource of the request is allowed, and
// 500 "Authorization error (...)" when the authorizer could not decide.
func (a *Auth) Filter(next http.Handler, log hclog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok, err := a.authenticator.Authenticate(r)
		if err != nil {
			log.Debug("unable to authenticate the request", "path", r.URL.Path, "remote", r.RemoteAddr, "error", err)
		}
		if err != nil || !ok {
			writeError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		attrs, err := RequestAttributes(user, a.nodeName, r)
		var unknown ErrUnknownMethod
		if errors.As(err, &unknown) {
			w.Header().Set("Allow", "GET, HEAD, POST, PUT, PATCH, DELETE")
			writeError(w, http.StatusMethodNotAllowed, err.Error())
			return
		}
		subresources := make([]string, 0, len(attrs))
		var reasons []string
		for _, attr := range attrs {
			subresources = append(subresources, attr.Subresource)
			allowed, reason, err := a.authorizer.Authorize(r.Context(), attr)
			if err != nil {
				log.Error("authorization error", "user", user.Name, "verb", attr.Verb, "resource", "nodes", "subresource", attr.Subresource, "error", err)
				writeError(w, http.StatusInternalServerError, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
					user.Name, attr.Verb, "nodes", attr.Subresource))
				return
			}
			if allowed {
				next.ServeHTTP(w, r)
				return
			}
			if reason != "" {
				reasons = append(reasons, reason)
			}
		}
		log.Debug("forbidden", "user", user.Name, "verb", attrs[0].Verb, "resource", "nodes", "subresources", subresources, "reasons", reasons)
		writeError(w, http.StatusForbidden, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)\n",
			user.Name, attrs[0].Verb, "nodes", subresources))
	})
}

// writeError writes a plain-text error body exactly as given.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprint(w, msg)
}
