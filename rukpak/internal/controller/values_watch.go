package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// ValuesWatch watches the Secrets and ConfigMaps that helm BundleDeployments name in
// spec.config.valuesFrom, and reconciles a BundleDeployment at once when one of its objects is
// created, changed or deleted. They are users' objects, outside rukpak's label-scoped cache, so each
// is watched on its own, by name (a metadata.name field selector in its namespace), and as metadata
// only (PartialObjectMetadata, managedFields dropped): memory grows with the number of distinct
// references (at most 16 per BundleDeployment), never with the Secrets and ConfigMaps of the
// cluster, and no value is kept in memory. A watch is stopped when no BundleDeployment names its
// object any more. RBAC: list and watch on secrets and configmaps in the install namespaces of
// helm BundleDeployments (get is already needed to read the values).
type ValuesWatch struct {
	client metadata.Interface
	events chan event.GenericEvent

	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	watches map[valuesKey]*valuesWatch
	byName  map[string][]valuesKey // BundleDeployment → what it references
}

// valuesKey is one referenced object.
type valuesKey struct{ kind, namespace, name string }

type valuesWatch struct {
	stop  context.CancelFunc
	users map[string]bool
}

// NewValuesWatch returns a ValuesWatch that reads through c (a metadata client of the API server).
func NewValuesWatch(c metadata.Interface) *ValuesWatch {
	ctx, cancel := context.WithCancel(context.Background())
	return &ValuesWatch{client: c, events: make(chan event.GenericEvent, 64), ctx: ctx, cancel: cancel,
		watches: map[valuesKey]*valuesWatch{}, byName: map[string][]valuesKey{}}
}

// Start implements manager.Runnable: every watch stops when ctx ends.
func (w *ValuesWatch) Start(ctx context.Context) error {
	<-ctx.Done()
	w.cancel()
	return nil
}

// Events are the reconcile requests, as generic events of BundleDeployments (only their names set).
func (w *ValuesWatch) Events() <-chan event.GenericEvent { return w.events }

// Len is how many objects are watched.
func (w *ValuesWatch) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches)
}

// valuesKeys are the objects bd's valuesFrom names (none unless it uses the helm provisioner).
func valuesKeys(bd *rukpakv1alpha1.BundleDeployment) []valuesKey {
	if bd.Spec.ProvisionerClassName != rukpakv1alpha1.ProvisionerHelm || bd.Spec.Config == nil || !bd.DeletionTimestamp.IsZero() {
		return nil
	}
	var keys []valuesKey
	for _, ref := range bd.Spec.Config.ValuesFrom {
		k := valuesKey{kind: ref.Kind, namespace: bd.Spec.InstallNamespace, name: ref.Name}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// Track makes the watched objects of bd those its spec names now. It returns once the new watches
// have listed (at most valuesSyncTimeout): a change after Track is an event, not part of the
// initial list.
func (w *ValuesWatch) Track(bd *rukpakv1alpha1.BundleDeployment) {
	synced := w.set(bd.Name, valuesKeys(bd))
	if len(synced) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(w.ctx, valuesSyncTimeout)
	defer cancel()
	toolscache.WaitForCacheSync(ctx.Done(), synced...)
}

// valuesSyncTimeout bounds how long Track waits for a new watch's initial list.
const valuesSyncTimeout = 10 * time.Second

// Forget stops watching for BundleDeployment name.
func (w *ValuesWatch) Forget(name string) { w.set(name, nil) }

// set records what name references and returns the HasSynced of the watches it started.
func (w *ValuesWatch) set(name string, keys []valuesKey) []toolscache.InformerSynced {
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.byName[name]
	if slices.Equal(old, keys) {
		return nil
	}
	var synced []toolscache.InformerSynced
	for _, k := range old {
		if slices.Contains(keys, k) {
			continue
		}
		if vw := w.watches[k]; vw != nil {
			delete(vw.users, name)
			if len(vw.users) == 0 {
				vw.stop()
				delete(w.watches, k)
			}
		}
	}
	for _, k := range keys {
		vw := w.watches[k]
		if vw == nil {
			stop, hasSynced := w.start(k)
			vw = &valuesWatch{users: map[string]bool{}, stop: stop}
			w.watches[k] = vw
			synced = append(synced, hasSynced)
		}
		vw.users[name] = true
	}
	if len(keys) == 0 {
		delete(w.byName, name)
	} else {
		w.byName[name] = keys
	}
	return synced
}

// start runs an informer of the one object k names; its initial list is not an event (the
// reconcile that asked for the watch has just read the object), later changes are.
func (w *ValuesWatch) start(k valuesKey) (context.CancelFunc, toolscache.InformerSynced) {
	ctx, cancel := context.WithCancel(w.ctx)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if k.kind == "Secret" {
		gvr.Resource = "secrets"
	}
	sel := fields.OneTermEqualSelector("metadata.name", k.name).String()
	res := w.client.Resource(gvr).Namespace(k.namespace)
	lw := &toolscache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return res.List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return res.Watch(ctx, o)
		},
	}
	inf := toolscache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0, toolscache.Indexers{})
	_ = inf.SetTransform(func(o interface{}) (interface{}, error) {
		if m, ok := o.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return o, nil
	})
	reg, _ := inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ interface{}, initial bool) {
			if !initial {
				w.notify(ctx, k)
			}
		},
		UpdateFunc: func(o, n interface{}) {
			om, ok1 := o.(metav1.Object)
			nm, ok2 := n.(metav1.Object)
			if !ok1 || !ok2 || om.GetResourceVersion() != nm.GetResourceVersion() {
				w.notify(ctx, k)
			}
		},
		DeleteFunc: func(interface{}) { w.notify(ctx, k) },
	})
	go inf.Run(ctx.Done())
	return cancel, func() bool { return reg != nil && reg.HasSynced() }
}

// notify queues a reconcile of every BundleDeployment that names k.
func (w *ValuesWatch) notify(ctx context.Context, k valuesKey) {
	w.mu.Lock()
	var names []string
	if vw := w.watches[k]; vw != nil {
		for n := range vw.users {
			names = append(names, n)
		}
	}
	w.mu.Unlock()
	slices.Sort(names)
	for _, n := range names {
		bd := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: n}}
		select {
		case w.events <- event.GenericEvent{Object: bd}:
		case <-ctx.Done():
			return
		}
	}
}

func (k valuesKey) String() string { return fmt.Sprintf("%s %s/%s", k.kind, k.namespace, k.name) }
