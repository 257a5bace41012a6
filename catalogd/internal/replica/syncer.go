package replica

import (
	"context"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
)

// Syncer keeps this replica's store serving what every Catalog's status names. It runs on every
// replica (it is not leader-elected) but writes only while the replica is not the leader; it never
// writes to the API server.
type Syncer struct {
	// Client reads Catalogs; default: the manager's cached client.
	Client client.Reader
	// Cache tells whether the Catalog informer has synced (readiness); default: the manager's cache.
	Cache cache.Cache
	// Loader fills the store; share it with the reconciler of the same process.
	Loader *Loader
	// Elected is closed once this replica is the leader; default: the manager's Elected().
	Elected <-chan struct{}
	// MaxConcurrentLoads is how many Catalogs a standby loads at once (catalogd's
	// --max-concurrent-unpacks, as for the leader's reconciler); default 1.
	MaxConcurrentLoads int

	mu       sync.Mutex
	failures map[string]string // catalog -> why its last load failed
}

// errLeading aborts a load or removal once the replica leads: its reconciler owns the store then.
var errLeading = errors.New("this replica is the leader now; its Catalog reconciler owns the store")

// SetupWithManager registers the Syncer as a controller that does not need leader election, with a
// retry backoff from 1 s to 1 min.
func (s *Syncer) SetupWithManager(mgr ctrl.Manager) error {
	if s.Client == nil {
		s.Client = mgr.GetClient()
	}
	if s.Cache == nil {
		s.Cache = mgr.GetCache()
	}
	if s.Elected == nil {
		s.Elected = mgr.Elected()
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&catalogdv1alpha1.Catalog{}).
		Named("catalog-replica").
		WithOptions(controller.Options{
			MaxConcurrentReconciles: max(1, s.MaxConcurrentLoads),
			NeedLeaderElection:      ptr.To(false),
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, time.Minute),
		}).
		Complete(s)
}

func (s *Syncer) leading() bool {
	select {
	case <-s.Elected:
		return true
	default:
		return false
	}
}

func (s *Syncer) notLeading() error {
	if s.leading() {
		return errLeading
	}
	return nil
}

// Reconcile makes the store serve what the Catalog's status names, or nothing once it is deleted.
func (s *Syncer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if s.leading() {
		s.setFailure(req.Name, "")
		return ctrl.Result{}, nil
	}
	// A load in progress is abandoned when the replica is elected.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.Elected:
			cancel()
		case <-ctx.Done():
		}
	}()
	l := log.FromContext(ctx).WithValues("catalog", req.Name)

	cat := &catalogdv1alpha1.Catalog{}
	err := s.Client.Get(ctx, req.NamespacedName, cat)
	if apierrors.IsNotFound(err) || (err == nil && !cat.DeletionTimestamp.IsZero()) {
		return ctrl.Result{}, s.remove(ctx, req.Name)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	sc, err := WhatStatusNames(cat, s.Loader.Store)
	switch {
	case err != nil:
		// Only a new status can fix it; the next status update triggers a new attempt.
		s.setFailure(req.Name, err.Error())
		l.Error(err, "cannot tell what to fetch for the content the status names")
		return ctrl.Result{}, nil
	case !sc.Named:
		// Nothing was unpacked successfully yet: nothing to serve.
		s.setFailure(req.Name, "")
		return ctrl.Result{}, nil
	case sc.Held != nil:
		contentBytes.WithLabelValues(req.Name).Set(float64(sc.Held.Size))
		s.setFailure(req.Name, "")
		return ctrl.Result{}, nil
	}
	want := sc.Load.WantHash
	load := *sc.Load
	load.Guard = s.notLeading
	res, err := s.Loader.Load(ctx, load)
	if errors.Is(err, errLeading) || (err != nil && s.leading()) {
		s.setFailure(req.Name, "")
		return ctrl.Result{}, nil
	}
	if err != nil {
		s.setFailure(req.Name, cat.Status.ResolvedSource.String()+": "+err.Error())
		l.Info("loading the content the status names failed, retrying with backoff", "hash", want, "error", err.Error())
		return ctrl.Result{}, err
	}
	s.setFailure(req.Name, "")
	l.Info("loaded the content the status names", "hash", res.Content.Hash, "source", res.Resolved.String())
	return ctrl.Result{}, nil
}

// remove drops a deleted Catalog's content from this replica.
func (s *Syncer) remove(ctx context.Context, name string) error {
	s.setFailure(name, "")
	_, had := s.Loader.Store.Get(name)
	err := s.Loader.Remove(ctx, name, s.notLeading)
	if errors.Is(err, errLeading) {
		return nil
	}
	if err == nil && had {
		log.FromContext(ctx).Info("removed the content of a deleted catalog", "catalog", name)
	}
	return err
}

func (s *Syncer) setFailure(name, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if msg == "" {
		delete(s.failures, name)
		return
	}
	if s.failures == nil {
		s.failures = map[string]string{}
	}
	s.failures[name] = msg
}

func (s *Syncer) failure(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failures[name]
}
