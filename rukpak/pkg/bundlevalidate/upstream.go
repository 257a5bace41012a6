package bundlevalidate

import (
	"fmt"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
)

// runUpstreamValidators runs operator-framework/api's default bundle validators (CSV, CRD, bundle)
// on the bundle as operator-framework/api loads it.
func runUpstreamValidators(dir string, b *bundleFiles, r *Report) {
	bundle, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		r.add(Problem{File: b.manifestsDir + "/", Message: "operator-framework/api cannot load the bundle: " + err.Error(), Source: sourceAPI})
		return
	}
	if bundle == nil || bundle.CSV == nil {
		return
	}
	for _, res := range validation.DefaultBundleValidators.Validate(bundle.ObjectsToValidate()...) {
		for _, e := range res.Errors {
			addUpstream(b, r, res.Name, e, LevelError)
		}
		for _, e := range res.Warnings {
			addUpstream(b, r, res.Name, e, LevelWarning)
		}
	}
}

func addUpstream(b *bundleFiles, r *Report, name string, e apierrors.Error, level Level) {
	file := b.csvFile
	if o, ok := b.crds[name]; ok {
		file = o.File
	}
	msg := e.Detail
	if msg == "" {
		msg = e.Error()
	}
	if e.BadValue != nil {
		if s := fmt.Sprint(e.BadValue); s != "" && !strings.Contains(msg, s) && len(s) < 200 {
			msg = fmt.Sprintf("%s (value %s)", msg, s)
		}
	}
	// Our own checks already report these with file, field and fix.
	for _, dup := range []string{"duplicate install modes", "none of InstallModeTypes are supported", "install modes not found"} {
		if strings.Contains(msg, dup) {
			return
		}
	}
	if strings.Contains(msg, "owned CRD") && strings.Contains(msg, "not found in bundle") {
		return
	}
	r.add(Problem{Level: level, File: file, Field: e.Field, Message: msg, Source: sourceAPI})
}
