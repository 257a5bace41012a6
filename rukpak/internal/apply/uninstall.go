package apply

// Uninstalling a release: deleting (or orphaning) what it owns, then its stored revisions.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Uninstall removes release name: with orphan unset it deletes every object any stored revision
// applied that the BundleDeployment still owns at that moment (CustomResourceDefinitions only when
// deleteCRDs is set); with orphan set it removes the ownership labels from them and leaves them in
// place. Then it deletes the revisions. It returns the objects left alone because another owner
// holds them now.
func (e *Engine) Uninstall(ctx context.Context, name string, deleteCRDs, orphan bool) ([]string, error) {
	hist, err := e.history(name)
	if err != nil || len(hist) == 0 {
		return nil, err
	}
	recorded, err := e.recordedObjects(hist...)
	if err != nil {
		return nil, err
	}
	all := map[ObjectKey]*unstructured.Unstructured{}
	for _, objs := range recorded {
		for _, u := range objs {
			all[KeyOf(u)] = u
		}
	}
	var errs []string
	var leftAlone []string
	for k, u := range all {
		var err error
		switch {
		case orphan:
			err = e.orphanOwned(ctx, name, u)
		case isCRD(u) && !deleteCRDs:
			err = e.releaseCRD(ctx, name, u)
		default:
			var skipped bool
			if skipped, err = e.deleteOwned(ctx, name, u); skipped {
				leftAlone = append(leftAlone, k.String())
			}
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	sort.Strings(leftAlone)
	if len(errs) > 0 {
		sort.Strings(errs)
		return leftAlone, errors.New(strings.Join(errs, "; "))
	}
	for _, r := range hist {
		if _, err := e.Storage.Delete(r.Name, r.Version); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
			return leftAlone, fmt.Errorf("deleting revision %d of release %q: %w", r.Version, name, err)
		}
	}
	return leftAlone, nil
}
