package apply

// Removing what a revision no longer contains: the prune after a new revision was applied, and
// the undoing of a failed upgrade (rollback). Neither ever deletes a CustomResourceDefinition.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// prune deletes what the earlier revisions applied (decoded) and objs no longer contain (never
// CRDs), if release name still owns it; it returns what it left alone because another owner holds
// it now.
func (e *Engine) prune(ctx context.Context, name string, earlier [][]*unstructured.Unstructured, objs []*unstructured.Unstructured) ([]string, error) {
	keep := map[ObjectKey]bool{}
	for _, u := range objs {
		keep[KeyOf(u)] = true
	}
	var leftAlone []string
	for _, old := range earlier {
		for _, u := range old {
			k := KeyOf(u)
			if keep[k] || isCRD(u) {
				continue
			}
			keep[k] = true // once per object, whichever revisions had it
			skipped, err := e.deleteOwned(ctx, name, u)
			if err != nil {
				return nil, fmt.Errorf("pruning %s, which the new revision no longer contains: %w", k, err)
			}
			if skipped {
				leftAlone = append(leftAlone, k.String())
			}
		}
	}
	sort.Strings(leftAlone)
	return leftAlone, nil
}

// rollback re-applies the deployed revision's objects (old) and deletes what the failed one added.
func (e *Engine) rollback(ctx context.Context, req Request, old, failed []*unstructured.Unstructured) error {
	keep := map[ObjectKey]bool{}
	for _, u := range old {
		keep[KeyOf(u)] = true
	}
	var errs []string
	for _, u := range failed {
		if !keep[KeyOf(u)] && !isCRD(u) {
			if _, err := e.deleteOwned(ctx, req.Name, u); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if err := e.applyAll(ctx, req, old, nil); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
