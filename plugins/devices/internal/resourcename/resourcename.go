// Package resourcename checks extended resource names as the kubelet does
// (v1helper.IsExtendedResourceName), without linking k8s.io/apimachinery:
// the device plugins stay lean.
package resourcename

import (
	"fmt"
	"regexp"
	"strings"
)

// Upstream's limits and patterns (k8s.io/apimachinery/pkg/util/validation).
const (
	// quotaPrefix is what upstream prepends before checking the name: an
	// extended resource must also be valid as a quota name.
	quotaPrefix         = "requests."
	maxSubdomainLength  = 253
	maxNameLength       = 63
	subdomainPatternStr = `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`
	namePatternStr      = `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
)

var (
	subdomainPattern = regexp.MustCompile(`^` + subdomainPatternStr + `$`)
	namePattern      = regexp.MustCompile(`^` + namePatternStr + `$`)
)

// Validate says why name is not an extended resource name such as
// "vendor.example/gpu"; nil when it is one.
func Validate(name string) error {
	domain, short, qualified := strings.Cut(name, "/")
	switch {
	case !qualified:
		return fmt.Errorf("%q has no domain: expected <domain>/<name>, such as \"vendor.example/gpu\"", name)
	case strings.Contains(name, "kubernetes.io/"):
		return fmt.Errorf("%q is in a kubernetes.io domain, which is reserved for native resources", name)
	case strings.HasPrefix(name, quotaPrefix):
		return fmt.Errorf("%q starts with %q, which is reserved for quota names", name, quotaPrefix)
	case strings.Contains(short, "/"):
		return fmt.Errorf("%q has more than one '/': expected <domain>/<name>", name)
	}
	if prefixed := quotaPrefix + domain; len(prefixed) > maxSubdomainLength || !subdomainPattern.MatchString(prefixed) {
		return fmt.Errorf("%q: the domain %q must be a DNS subdomain of lower-case letters, digits, '-' and '.', of at most %d characters",
			name, domain, maxSubdomainLength-len(quotaPrefix))
	}
	if len(short) > maxNameLength || !namePattern.MatchString(short) {
		return fmt.Errorf("%q: the name %q must be at most %d letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
			name, short, maxNameLength)
	}
	return nil
}
