package controller

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// hostReadyBuffer is how many "may go ahead" notices wait for the controller; past it a deferred
// BundleDeployment is retried after its RetryAfter instead.
const hostReadyBuffer = 1024

// hostReadyEvents returns the channel on which the Unpacker (when it limits the pulls per registry
// host, source.HostLimits) names the BundleDeployments whose deferred unpack may go ahead now, so
// that they are reconciled at once rather than after their retry interval; nil when it does not.
func (r *BundleDeploymentReconciler) hostReadyEvents() chan event.GenericEvent {
	n, ok := r.Unpacker.(source.HostReadyNotifier)
	if !ok {
		return nil
	}
	ch := make(chan event.GenericEvent, hostReadyBuffer)
	n.OnHostReady(func(key string) {
		name, ok := strings.CutPrefix(key, unpackKey(&rukpakv1alpha1.BundleDeployment{}))
		if !ok {
			return
		}
		select {
		case ch <- event.GenericEvent{Object: &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}}:
		default: // full: RetryAfter still applies
		}
	})
	return ch
}
