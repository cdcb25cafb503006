package auth

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// The kubelet's client to the API server: kubeAPIQPS and kubeAPIBurst.
const (
	clientQPS   = 50
	clientBurst = 100
	// webhookTimeout bounds one review, as the API server's webhook
	// authenticator and authorizer do.
	webhookTimeout = 30 * time.Second
)

// webhookBackoff retries a review that failed for a passing reason,
// upstream's DefaultAuthWebhookRetryBackoff.
var webhookBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// reviewScheme knows the two review types and nothing else.
var reviewScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := authenticationv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := authorizationv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// reviewClient is a REST client for one API group's review resources.
func reviewClient(cfg *rest.Config, gv schema.GroupVersion) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(reviewScheme).WithoutConversion()
	c.ContentType = runtime.ContentTypeJSON
	c.QPS, c.Burst = clientQPS, clientBurst
	if c.UserAgent == "" {
		c.UserAgent = "microlet"
	}
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", gv, err)
	}
	return client, nil
}

// create POSTs a review and decodes the answer into out, retrying what
// failed for a passing reason (upstream's DefaultShouldRetry).
func create(ctx context.Context, client *rest.RESTClient, resource string, review, out runtime.Object) error {
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	var lastErr error
	err := wait.ExponentialBackoffWithContext(ctx, webhookBackoff, func(ctx context.Context) (bool, error) {
		lastErr = client.Post().Resource(resource).Body(review).Do(ctx).Into(out)
		switch {
		case lastErr == nil:
			return true, nil
		case shouldRetry(lastErr):
			return false, nil
		default:
			return false, lastErr
		}
	})
	if lastErr != nil {
		return fmt.Errorf("%s: %w", resource, lastErr)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", resource, err)
	}
	return nil
}

func shouldRetry(err error) bool {
	if utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err) || apierrors.IsInternalError(err) ||
		apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	_, retry := apierrors.SuggestsClientDelay(err)
	return retry
}
