package stdoutguard

import (
	"testing"

	"github.com/microlet/microlet/sdk/transport"
)

func TestCookieKeyMatchesTransport(t *testing.T) {
	if CookieKey != transport.Handshake.MagicCookieKey {
		t.Fatalf("CookieKey = %q, transport.Handshake.MagicCookieKey = %q: the guard would not recognise a plugin launch",
			CookieKey, transport.Handshake.MagicCookieKey)
	}
}
