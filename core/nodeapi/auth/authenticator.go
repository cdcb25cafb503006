package auth

import (
	"errors"
	"net/http"
	"slices"
)

// Authenticator finds out who sent a request. It answers ok false, with no
// error, when the request carries no credential it reads; an error means
// the request carries one and it is not good (or could not be checked).
type Authenticator interface {
	Authenticate(r *http.Request) (u *User, ok bool, err error)
}

// union tries each authenticator in turn, as upstream's delegating
// authenticator: the first to recognise the request wins, and users it
// returns join system:authenticated. With anonymous on, a request that
// carries no credential at all is system:anonymous; one whose credential
// failed is refused, not let in as anonymous.
type union struct {
	authenticators []Authenticator
	anonymous      bool
}

func (u union) Authenticate(r *http.Request) (*User, bool, error) {
	var errs []error
	for _, a := range u.authenticators {
		user, ok, err := a.Authenticate(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return withGroup(user, AllAuthenticated), true, nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, false, err
	}
	if u.anonymous {
		return &User{Name: Anonymous, Groups: []string{AllUnauthenticated}}, true, nil
	}
	return nil, false, nil
}

// withGroup is user with group added unless it has it already.
func withGroup(user *User, group string) *User {
	if slices.Contains(user.Groups, group) {
		return user
	}
	out := *user
	out.Groups = append(slices.Clip(user.Groups), group)
	return &out
}
