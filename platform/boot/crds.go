package boot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// WaitForCRDs blocks until every named CRD exists and is Established, logging what it still waits
// for. The error names the CRDs that are missing and how to install them.
func WaitForCRDs(ctx context.Context, cfg *rest.Config, log logr.Logger, timeout time.Duration, names ...string) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var pending []string
	lastLog := time.Time{}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pending = pending[:0]
		for _, name := range names {
			crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				pending = append(pending, name+" (not found)")
			case err != nil:
				pending = append(pending, fmt.Sprintf("%s (%v)", name, err))
			case !established(crd):
				pending = append(pending, name+" (not yet Established)")
			}
		}
		if len(pending) > 0 && time.Since(lastLog) > 10*time.Second {
			log.Info("waiting for CRDs", "pending", pending)
			lastLog = time.Now()
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("CRDs not ready after %s: %s (install them with `kubectl apply -f <component>/config/crd/bases` or the Helm chart): %w",
			timeout, strings.Join(pending, ", "), err)
	}
	log.Info("CRDs established", "crds", names)
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
