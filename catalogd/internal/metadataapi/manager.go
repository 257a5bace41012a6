package metadataapi

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/olmv1/olmv1/catalogd/internal/storage"
)

// AddToManager runs the metadatav1alpha1.CatalogMetadata API server over store as part of mgr: the server itself, the
// loop that turns store changes into watch events, and (unless reg.Mode is "none") the APIService
// registration with kube-apiserver.
func AddToManager(mgr ctrl.Manager, store *storage.Store, o ServerOptions, reg Registration) error {
	log := mgr.GetLogger().WithName("metadata-api")
	hub, err := NewHub(StoreReader{Store: store})
	if err != nil {
		return fmt.Errorf("indexing catalog metadata: %w", err)
	}
	if o.Config == nil {
		o.Config = mgr.GetConfig()
	}
	o.Log = log
	srv, err := NewServer(o, hub)
	if err != nil {
		return err
	}
	log.Info("serving certificate", "source", srv.cert.String())
	if srv.ownCert {
		// The deprecated --metadata-cert-dir: the server reloads its own certificate; a reload that
		// cannot be loaded makes the replica not ready, with the reason.
		log.Info("--metadata-cert-dir is deprecated: use --tls-cert-dir, the certificate of every TLS server of catalogd")
		if err := mgr.AddReadyzCheck("metadata-cert", srv.cert.Ready); err != nil {
			return err
		}
	}
	runnables := []manager.Runnable{
		srv,
		manager.RunnableFunc(func(ctx context.Context) error {
			Follow(ctx, store, hub, 5*time.Minute, log)
			return nil
		}),
	}
	if reg.Mode != "none" {
		c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
		if err != nil {
			return err
		}
		runnables = append(runnables, manager.RunnableFunc(func(ctx context.Context) error {
			// Retry: kube-apiserver may still be starting, or RBAC may still be propagating.
			err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 8, Cap: 30 * time.Second}, func(ctx context.Context) (bool, error) {
				if err := Register(ctx, c, reg, srv.CABundle); err != nil {
					log.Error(err, "registering the APIService; retrying", "apiService", APIServiceName)
					return false, nil
				}
				return true, nil
			})
			if err != nil {
				return fmt.Errorf("registering APIService %s: %w", APIServiceName, err)
			}
			log.Info("registered", "apiService", APIServiceName, "mode", reg.Mode, "service", reg.Namespace+"/"+reg.Service, "port", reg.Port)
			<-ctx.Done()
			return nil
		}))
	}
	for _, r := range runnables {
		// Every replica serves the API, not only the leader.
		if err := mgr.Add(everyReplica{r}); err != nil {
			return err
		}
	}
	return nil
}

// everyReplica runs a runnable on every replica, leader or not.
type everyReplica struct{ manager.Runnable }

func (everyReplica) NeedLeaderElection() bool { return false }
