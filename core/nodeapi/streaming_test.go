package nodeapi

import (
	"errors"
	"net/http/httptest"
	"reflect"
	"testing"

	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/util/exec"
)

func TestTunnelProtocols(t *testing.T) {
	for _, tc := range []struct {
		name      string
		websocket bool
		protocols string
		want      []string
	}{
		{"kubectl's tunnel", true, "SPDY/3.1+portforward.k8s.io", []string{"portforward.k8s.io"}},
		{"several offered", true, "v4.channel.k8s.io, SPDY/3.1+portforward.k8s.io", []string{"portforward.k8s.io"}},
		{"the kubelet's own WebSocket protocol", true, "v4.channel.k8s.io", nil},
		{"not a kubernetes protocol", true, "SPDY/3.1+evil.example.com", nil},
		{"not a WebSocket", false, "SPDY/3.1+portforward.k8s.io", nil},
	} {
		r := httptest.NewRequest("GET", "/portForward/ns/p", nil)
		if tc.websocket {
			r.Header.Set("Connection", "Upgrade")
			r.Header.Set("Upgrade", "websocket")
			r.Header.Set("Sec-Websocket-Version", "13")
			r.Header.Set("Sec-Websocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		}
		r.Header.Set("Sec-Websocket-Protocol", tc.protocols)
		if got := tunnelProtocols(r); !reflect.DeepEqual(got, tc.want) || isTunnelRequest(r) != (tc.want != nil) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestExitStatus(t *testing.T) {
	s := exitStatus(exec.CodeExitError{Err: errors.New("exit 3"), Code: 3}).Status()
	if s.Reason != remotecommandconsts.NonZeroExitCodeReason || s.Details == nil || len(s.Details.Causes) != 1 ||
		s.Details.Causes[0].Type != remotecommandconsts.ExitCodeCauseType || s.Details.Causes[0].Message != "3" {
		t.Errorf("status %+v; want NonZeroExitCode with the code in an ExitCode cause", s)
	}
}
