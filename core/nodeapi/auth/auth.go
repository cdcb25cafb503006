package auth

import (
	"crypto/x509"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// Options are the node API's authentication and authorization settings.
type Options struct {
	// NodeName is the name authorization asks about (nodes/<name>).
	NodeName string
	// ClientCAFile, when set, authenticates client certificates signed by
	// one of its CAs.
	ClientCAFile string
	// API reaches the API server: bearer tokens are reviewed there when
	// TokenWebhook is on, and Webhook authorization asks it. Nil: no API
	// server.
	API *rest.Config
	// TokenWebhook turns on bearer tokens (with API); TokenCacheTTL is how
	// long a review's answer is kept.
	TokenWebhook  bool
	TokenCacheTTL time.Duration
	// Anonymous lets requests without credentials in as system:anonymous.
	Anonymous bool
	// Mode is ModeAlwaysAllow or ModeWebhook; the TTLs keep the Webhook
	// answers.
	Mode                     string
	AuthorizedTTL, DeniedTTL time.Duration
}

// Auth is the node API's authentication and authorization.
type Auth struct {
	nodeName      string
	authenticator Authenticator
	authorizer    Authorizer
	cas           *caBundle
}

// reviewers ask the API server; tests stand in for it.
type reviewers struct {
	token  tokenReviewer
	access accessReviewer
}

// New builds the authenticators and the authorizer opts ask for.
func New(opts Options) (*Auth, error) {
	var r reviewers
	if opts.API != nil {
		var err error
		if opts.TokenWebhook {
			if r.token, err = apiTokenReviewer(opts.API); err != nil {
				return nil, fmt.Errorf("token webhook: %w", err)
			}
		}
		if opts.Mode == ModeWebhook {
			if r.access, err = apiAccessReviewer(opts.API); err != nil {
				return nil, fmt.Errorf("authorization webhook: %w", err)
			}
		}
	}
	return build(opts, r, clock.RealClock{})
}

func build(opts Options, r reviewers, clk clock.PassiveClock) (*Auth, error) {
	a := &Auth{nodeName: opts.NodeName}
	var authenticators []Authenticator
	if opts.ClientCAFile != "" {
		cas, err := loadCABundle(opts.ClientCAFile, clk)
		if err != nil {
			return nil, err
		}
		a.cas = cas
		authenticators = append(authenticators, clientCerts{cas: cas, clock: clk})
	}
	if opts.TokenWebhook && r.token != nil {
		authenticators = append(authenticators, newBearerTokens(r.token, opts.TokenCacheTTL, clk))
	}
	a.authenticator = union{authenticators: authenticators, anonymous: opts.Anonymous}

	switch opts.Mode {
	case ModeAlwaysAllow:
		a.authorizer = alwaysAllow{}
	case ModeWebhook:
		if r.access == nil {
			// Nobody to ask: fail closed. (The config refuses this when any
			// caller could authenticate.)
			a.authorizer = denyAll{}
			break
		}
		a.authorizer = newAccessReviews(r.access, opts.AuthorizedTTL, opts.DeniedTTL, clk)
	default:
		return nil, fmt.Errorf("unknown authorization mode %q: expected %s or %s", opts.Mode, ModeAlwaysAllow, ModeWebhook)
	}
	return a, nil
}

// ClientCAs is the client CA bundle now in use, for the TLS handshake to
// name the CAs it accepts; nil without one.
func (a *Auth) ClientCAs() *x509.CertPool {
	if a.cas == nil {
		return nil
	}
	return a.cas.pool()
}
