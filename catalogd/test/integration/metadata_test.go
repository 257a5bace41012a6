package integration

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/olmv1/olmv1/catalogd/internal/fbc"
	"github.com/olmv1/olmv1/catalogd/internal/metadataapi"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
)

// The CatalogMetadata API server (with delegated authentication and authorization against the
// envtest kube-apiserver) run twice over two stores holding the same
// content, as two catalogd replicas, and restarted over the same store: lists, pages and watches
// continue across them through the real request handling, and a client-go informer (which uses
// watch-list) syncs and follows changes.

var catalogMetadataGVR = schema.GroupVersionResource{Group: "metadata.catalogd.operatorframework.io", Version: "v1alpha1", Resource: "catalogmetadata"}

// metadataServer is one catalogd process's metadata API.
type metadataServer struct {
	store  *storage.Store
	dyn    dynamic.Interface
	client dynamic.NamespaceableResourceInterface
	stop   func()
}

func startMetadataServer(t *testing.T, dir string) *metadataServer {
	t.Helper()
	store, err := storage.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	hub, err := metadataapi.NewHub(metadataapi.StoreReader{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	srv, err := metadataapi.NewServer(metadataapi.ServerOptions{
		BindAddress: fmt.Sprintf("127.0.0.1:%d", port),
		CertDir:     t.TempDir(),
		Config:      suite.Config,
	}, hub)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = srv.Start(ctx); done <- struct{}{} }()
	go func() { metadataapi.Follow(ctx, store, hub, time.Minute, logr.Discard()); done <- struct{}{} }()
	s := &metadataServer{store: store}
	stopped := false
	s.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
			<-done
		}
	}
	t.Cleanup(s.stop)

	// The API server's admin identity, sent straight to this server (no aggregation in between).
	cfg := &rest.Config{
		Host: fmt.Sprintf("https://127.0.0.1:%d", port),
		TLSClientConfig: rest.TLSClientConfig{
			CertData: suite.Config.CertData, KeyData: suite.Config.KeyData, CAData: srv.CABundle, ServerName: "localhost",
		},
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.dyn, s.client = dc, dc.Resource(catalogMetadataGVR)
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := s.client.List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the metadata API server on port %d does not answer lists: %v", port, err)
	}
	return s
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// catalogContent is a valid catalog of package pkg with one bundle per version.
func catalogContent(t *testing.T, pkg string, versions ...string) *fbc.Catalog {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "schema: olm.package\nname: %s\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: %s\nname: stable\nentries:\n", pkg, pkg)
	for i, v := range versions {
		fmt.Fprintf(&b, "- name: %s.v%s\n", pkg, v)
		if i > 0 {
			fmt.Fprintf(&b, "  replaces: %s.v%s\n", pkg, versions[i-1])
		}
	}
	for _, v := range versions {
		fmt.Fprintf(&b, "---\nschema: olm.bundle\npackage: %s\nname: %s.v%s\nimage: example.com/%s:v%s\nproperties:\n- type: olm.package\n  value: {packageName: %s, version: %s}\n",
			pkg, pkg, v, pkg, v, pkg, v)
	}
	c, err := fbc.Load(t.Context(), fstest.MapFS{"catalog.yaml": &fstest.MapFile{Data: []byte(b.String())}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func put(t *testing.T, s *storage.Store, catalog string, c *fbc.Catalog) {
	t.Helper()
	if _, err := s.Put(catalog, c); err != nil {
		t.Fatal(err)
	}
}

// eventsUntilBookmark collects "TYPE spec.name" of the watch's events up to its next bookmark.
func eventsUntilBookmark(t *testing.T, w watch.Interface) []string {
	t.Helper()
	var got []string
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %v", got)
			}
			if ev.Type == watch.Bookmark {
				sort.Strings(got)
				return got
			}
			if ev.Type == watch.Error {
				t.Fatalf("watch error: %v", apierrors.FromObject(ev.Object))
			}
			name, _, _ := unstructured.NestedString(ev.Object.(*unstructured.Unstructured).Object, "spec", "name")
			got = append(got, string(ev.Type)+" "+name)
		case <-timeout:
			t.Fatalf("no bookmark after %v", got)
		}
	}
}

func TestMetadataVersionsAcrossReplicasAndRestarts(t *testing.T) {
	// envtest's kube-apiserver has no front-proxy CA, which the servers log about on every request.
	klog.SetLogger(logr.Discard())
	dirA := t.TempDir()
	dirB := t.TempDir()
	for _, dir := range []string{dirA, dirB} {
		s, err := storage.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		put(t, s, "alpha", catalogContent(t, "foo", "1.0.0", "1.1.0"))
		put(t, s, "beta", catalogContent(t, "bar", "2.0.0"))
	}
	a, b := startMetadataServer(t, dirA), startMetadataServer(t, dirB)
	ctx := t.Context()

	la, err := a.client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if la.GetResourceVersion() != lb.GetResourceVersion() || len(la.Items) != 7 {
		t.Fatalf("the same content: list at %q (%d objects) on A, at %q on B", la.GetResourceVersion(), len(la.Items), lb.GetResourceVersion())
	}

	t.Run("pages continue on the other replica", func(t *testing.T) {
		var got []string
		opts := metav1.ListOptions{Limit: 3}
		for i := 0; ; i++ {
			l, err := []*metadataServer{a, b}[i%2].client.List(ctx, opts)
			if err != nil {
				t.Fatalf("page %d: %v", i+1, err)
			}
			for _, item := range l.Items {
				got = append(got, item.GetName())
			}
			if opts.Continue = l.GetContinue(); opts.Continue == "" {
				break
			}
		}
		var want []string
		for _, item := range la.Items {
			want = append(want, item.GetName())
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("paged %v\nwant %v", got, want)
		}
	})

	t.Run("bad versions and tokens: 400 and 410", func(t *testing.T) {
		_, err := b.client.List(ctx, metav1.ListOptions{Limit: 1, Continue: "not-a-token!"})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "invalid continue token") {
			t.Errorf("malformed continue token: %v, want 400", err)
		}
		_, err = b.client.Watch(ctx, metav1.ListOptions{ResourceVersion: "yesterday"})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "invalid resourceVersion") {
			t.Errorf("malformed resourceVersion: %v, want 400", err)
		}
		other := startMetadataServer(t, t.TempDir())
		put(t, other.store, "alpha", catalogContent(t, "foo", "9.0.0"))
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			l, err := other.client.List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) == 3, nil
		}); err != nil {
			t.Fatal(err)
		}
		lo, err := other.client.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.client.Watch(ctx, metav1.ListOptions{ResourceVersion: lo.GetResourceVersion()})
		if !apierrors.IsResourceExpired(err) {
			t.Errorf("watch from another content's version: %v, want 410 Gone", err)
		}
		other.stop()
	})

	t.Run("list on A, watch on B, restart A, watch on A", func(t *testing.T) {
		rv := la.GetResourceVersion()
		w, err := b.client.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, LabelSelector: "catalog=alpha"})
		if err != nil {
			t.Fatalf("watch on B from A's list: %v", err)
		}
		defer w.Stop()
		put(t, b.store, "alpha", catalogContent(t, "foo", "1.0.0", "1.2.0"))
		if got := strings.Join(eventsUntilBookmark(t, w), ","); got != "ADDED foo.v1.2.0,DELETED foo.v1.1.0,MODIFIED stable" {
			t.Errorf("events on B: %s", got)
		}

		// catalogd restarts over the same store; the client comes back with the list's version.
		a.stop()
		restarted := startMetadataServer(t, dirA)
		w2, err := restarted.client.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, LabelSelector: "catalog=alpha"})
		if err != nil {
			t.Fatalf("watch after the restart from the list before it: %v", err)
		}
		defer w2.Stop()
		put(t, restarted.store, "alpha", catalogContent(t, "foo", "1.0.0", "1.2.0"))
		if got := strings.Join(eventsUntilBookmark(t, w2), ","); got != "ADDED foo.v1.2.0,DELETED foo.v1.1.0,MODIFIED stable" {
			t.Errorf("events after the restart: %s", got)
		}
	})

	t.Run("an informer syncs and follows changes", func(t *testing.T) {
		// client-go's reflector lists with watch-list (sendInitialEvents) by default: it needs the
		// bookmark that ends the initial events, and continues its watches from bookmarks.
		factory := dynamicinformer.NewDynamicSharedInformerFactory(b.dyn, 0)
		informer := factory.ForResource(catalogMetadataGVR).Informer()
		stop := make(chan struct{})
		defer close(stop)
		go informer.Run(stop)
		syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
			t.Fatal("the informer did not sync within 30s")
		}
		if n := len(informer.GetStore().List()); n != 7 {
			t.Errorf("the informer holds %d objects, B serves 7", n)
		}
		put(t, b.store, "beta", catalogContent(t, "bar", "2.0.0", "2.1.0"))
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			for _, o := range informer.GetStore().List() {
				if n, _, _ := unstructured.NestedString(o.(*unstructured.Unstructured).Object, "spec", "name"); n == "bar.v2.1.0" {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			t.Errorf("the informer did not get bar.v2.1.0: %v", err)
		}
	})
}
