package pluginhost

import (
	"errors"
	"fmt"
	"sort"
)

// slotKey names a slot: singleton kinds have one slot per kind, other kinds
// one per plugin name.
func slotKey(kind Kind, name string) string {
	if kind.Singleton() {
		return string(kind)
	}
	return string(kind) + "/" + name
}

// reconcilePlan is what Reconcile does to the slots.
type reconcilePlan struct {
	// apply holds the spec of every slot to start, or to swap if its spec
	// or binary changed, by slot key.
	apply map[string]resolvedSpec
	// remove holds the keys of slots no spec names any more, sorted.
	remove []string
}

// planReconcile matches specs to slots. Invalid specs and specs that claim a
// slot another spec already claimed are reported and skipped; a slot claimed
// by an invalid spec is kept as it is, so a typo in a config block does not
// stop a plugin that is serving.
func planReconcile(current []string, specs []Spec) (reconcilePlan, error) {
	plan := reconcilePlan{apply: map[string]resolvedSpec{}}
	claimed := map[string]string{} // slot key -> the spec that claimed it
	var errs []error
	for _, s := range specs {
		_, knownKind := s.Kind.Info()
		key := slotKey(s.Kind, s.Name)
		if by, dup := claimed[key]; dup && knownKind {
			if s.Kind.Singleton() {
				errs = append(errs, fmt.Errorf("plugin %s: %s takes one plugin and %s is configured already", s, s.Kind, by))
			} else {
				errs = append(errs, fmt.Errorf("plugin %s: configured twice", s))
			}
			continue
		}
		if knownKind {
			claimed[key] = s.String()
		}
		resolved, err := resolveSpec(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		plan.apply[key] = resolved
	}
	for _, key := range current {
		if _, ok := claimed[key]; !ok {
			plan.remove = append(plan.remove, key)
		}
	}
	sort.Strings(plan.remove)
	return plan, errors.Join(errs...)
}
