package conditionevents

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// NewRecorder returns the Recorder a controller records its Events on (through Policy.Record,
// Normal and Warning): events.k8s.io Events reported by name, sent through a client of cfg of their
// own (cfg's QPS and Burst, a limiter not shared with cfg's other clients) from now on, and the
// runnable that stops sending them when the manager stops.
//
// controller-runtime's manager sends Events through a client built from the manager's
// configuration, which has client-go's default limit of 5 requests per second. client-go's
// broadcaster starts one goroutine per Event and keeps it, with its copy of the Event, until the
// limiter lets the Event through: installing 300 Operators left 2,205 Events waiting in
// operator-controller and 1,473 in rukpak (19 MB and 14 MB of goroutine stacks alone), a backlog
// that grows with the number of Operators and takes minutes to drain.
func NewRecorder(cfg *rest.Config, scheme *runtime.Scheme, name string) (Recorder, manager.Runnable, error) {
	cl, err := newEventsClient(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the client of Events: %w", err)
	}
	return newRecorderWithClient(cl, scheme, name)
}

func newEventsClient(cfg *rest.Config) (*eventsv1client.EventsV1Client, error) {
	return eventsv1client.NewForConfig(rest.CopyConfig(cfg))
}

func newRecorderWithClient(cl eventsv1client.EventsV1Interface, scheme *runtime.Scheme, name string) (Recorder, manager.Runnable, error) {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cl})
	// Started at once, not with the manager: an Event recorded before a watcher of the broadcaster
	// exists would be lost.
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("starting to record Events: %w", err)
	}
	stop := manager.RunnableFunc(func(mgrCtx context.Context) error {
		<-mgrCtx.Done()
		cancel()
		b.Shutdown()
		return nil
	})
	return b.NewRecorder(scheme, name), stop, nil
}
