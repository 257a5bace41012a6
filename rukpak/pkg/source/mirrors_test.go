package source

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
	"github.com/olmv1/olmv1/rukpak/pkg/source/mirrors"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

// mirroredUnpacker writes a registries.conf and returns an unpacker that follows it, and its path.
func mirroredUnpacker(t *testing.T, conf string, objs ...corev1.Secret) (*DiskUnpacker, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "registries.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var c = fakeClient()
	if len(objs) > 0 {
		c = fakeClient(&objs[0])
	}
	return newTestUnpacker(t, c, func(cfg *Config) { cfg.Mirrors = &mirrors.Provider{File: path} }), path
}

// The source registry is blocked and never contacted: a digest reference is pulled from the mirror,
// the resolved reference still names the source repository, and Mirror names the mirror. Asked
// again (another key), the cached content still says where it came from.
func TestImageFromMirrorOfBlockedSource(t *testing.T) {
	src := sourcetest.NewRegistry(t)
	mirror := sourcetest.NewRegistry(t)
	digest := mirror.Push(t, catalogImage(t, "catalog"), "mirrored/catalogs/demo:v1")
	u, path := mirroredUnpacker(t, fmt.Sprintf(`
[[registry]]
location = %q
blocked = true
[[registry.mirror]]
location = %q
`, src.Host+"/catalogs", mirror.Host+"/mirrored/catalogs"))

	ref := src.Host + "/catalogs/demo@" + digest.DigestStr()
	res, err := u.Unpack(ctx(t), "catalog/demo", imageSrc(ref), catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, res.Dir, "catalog.json="+readFile(t, "testdata/catalog/catalog.json"))
	if got := res.ResolvedSource.Image.Ref; got != ref {
		t.Errorf("resolved ref %s, want the original repository %s", got, ref)
	}
	if got := res.ResolvedSource.Image.Mirror; got != digest.String() {
		t.Errorf("mirror %q, want %s", got, digest)
	}
	if got := res.ResolvedSource.String(); !strings.Contains(got, "pulled from mirror "+digest.String()) {
		t.Errorf("String() = %q, want it to name the mirror", got)
	}
	if n := len(src.Requests()); n != 0 {
		t.Errorf("the blocked source got %d requests: %q", n, src.Requests())
	}
	if mirror.CountRequests("/blobs/") == 0 {
		t.Errorf("the mirror served no blob: %q", mirror.Requests())
	}

	mirror.ResetRequests()
	again, err := u.Unpack(ctx(t), "catalog/other", imageSrc(ref), catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Dir != res.Dir || again.ResolvedSource.Image.Mirror != digest.String() || len(mirror.Requests())+len(src.Requests()) != 0 {
		t.Errorf("from cache: dir %s (want %s), mirror %q (want %s), requests %q %q (want none)",
			again.Dir, res.Dir, again.ResolvedSource.Image.Mirror, digest, mirror.Requests(), src.Requests())
	}
	t.Logf("registries.conf %s: pulled %s from %s", path, ref, res.ResolvedSource.Image.Mirror)
}

// A tag reference with only a digest-only mirror and a blocked source fails without any request,
// naming the file and what to change; without any mirror the blocked source fails the same way.
func TestImageBlockedSourceWithoutUsableMirror(t *testing.T) {
	src := sourcetest.NewRegistry(t)
	mirror := sourcetest.NewRegistry(t)
	digest := mirror.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	mirror.ResetRequests()

	u, path := mirroredUnpacker(t, fmt.Sprintf(`
[[registry]]
location = %q
blocked = true
[[registry.mirror]]
location = %q
pull-from-mirror = "digest-only"
`, src.Host, mirror.Host))
	_, err := u.Unpack(ctx(t), "catalog/demo", imageSrc(src.Ref("catalogs/demo:v1")), catalogOpts)
	e := wantError(t, err, KindInvalidSource, "registry "+src.Host+" is blocked by "+path, "no mirror serves this tag reference",
		mirror.Host+" (digest-only, from "+path+")", "use a digest reference")
	if !e.Retryable {
		t.Error("a blocked registry is not retryable, but the mirror configuration can change")
	}

	u, path = mirroredUnpacker(t, fmt.Sprintf("[[registry]]\nlocation = %q\nblocked = true\n", src.Host))
	_, err = u.Unpack(ctx(t), "catalog/demo", imageSrc(src.Host+"/catalogs/demo@"+digest.DigestStr()), catalogOpts)
	wantError(t, err, KindInvalidSource, "registry "+src.Host+" is blocked by "+path, "no mirror serves this digest reference")
	if n := len(src.Requests()) + len(mirror.Requests()); n != 0 {
		t.Errorf("%d requests to the registries, want none: %q %q", n, src.Requests(), mirror.Requests())
	}
}

// Endpoints are tried in order: a mirror without the image, then one with it; the source, not
// blocked, is not needed. When every endpoint fails, the error names each and why.
func TestImageMirrorFailover(t *testing.T) {
	src := sourcetest.NewRegistry(t)
	empty := sourcetest.NewRegistry(t)
	mirror := sourcetest.NewRegistry(t)
	digest := mirror.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	src.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	conf := fmt.Sprintf(`
[[registry]]
location = %q
[[registry.mirror]]
location = %q
[[registry.mirror]]
location = %q
`, src.Host, empty.Host, mirror.Host)
	u, path := mirroredUnpacker(t, conf)
	src.ResetRequests()
	res, err := u.Unpack(ctx(t), "catalog/demo", imageSrc(src.Ref("catalogs/demo:v1")), catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	if res.ResolvedSource.Image.Ref != src.Host+"/catalogs/demo@"+digest.DigestStr() || res.ResolvedSource.Image.Mirror != digest.String() {
		t.Errorf("resolved %+v, want ref in %s and mirror %s", res.ResolvedSource.Image, src.Host, digest)
	}
	if len(empty.Requests()) == 0 || len(src.Requests()) != 0 {
		t.Errorf("requests: empty mirror %q (want some), source %q (want none)", empty.Requests(), src.Requests())
	}

	mirror.Stop()
	src.Stop()
	_, err = u.Unpack(ctx(t), "catalog/other", imageSrc(src.Ref("catalogs/demo:v2")), catalogOpts)
	e := wantError(t, err, KindUnreachable,
		"could not be pulled from any of its 3 endpoints", "from "+path,
		"1) mirror "+empty.Host+"/catalogs/demo:v2 (from "+path+"):", "not found in registry "+empty.Host+" (copy the image to the mirror",
		"2) mirror "+mirror.Host+"/catalogs/demo:v2", "cannot reach registry "+mirror.Host,
		"3) source "+src.Host+"/catalogs/demo:v2:", "cannot reach registry "+src.Host)
	if !e.Retryable {
		t.Error("not retryable")
	}
}

// A pull secret's credentials reach a mirror only through an entry for the mirror's host.
func TestImageMirrorCredentialsByHost(t *testing.T) {
	src := sourcetest.NewRegistry(t)
	mirror := sourcetest.NewRegistry(t, sourcetest.WithBasicAuth("mirror-user", "mirror-pass"))
	digest := mirror.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	conf := fmt.Sprintf("[[registry]]\nlocation = %q\nblocked = true\n[[registry.mirror]]\nlocation = %q\n", src.Host, mirror.Host)
	secret := func(data []byte) corev1.Secret {
		return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: testNamespace}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: data}}
	}
	spec := imageSrc(src.Host + "/catalogs/demo@" + digest.DigestStr())
	spec.Image.PullSecret = "pull"

	u, _ := mirroredUnpacker(t, conf, secret(src.DockerConfigJSON("mirror-user", "mirror-pass")))
	_, err := u.Unpack(ctx(t), "catalog/demo", spec, catalogOpts)
	wantError(t, err, KindUnauthorized, "refused access", "a pull secret applies to a mirror only through an entry for the mirror's host", mirror.Host)

	u, _ = mirroredUnpacker(t, conf, secret(mirror.DockerConfigJSON("mirror-user", "mirror-pass")))
	res, err := u.Unpack(ctx(t), "catalog/demo", spec, catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	if res.ResolvedSource.Image.Mirror != digest.String() || len(src.Requests()) != 0 {
		t.Errorf("mirror %q (want %s), source requests %q (want none)", res.ResolvedSource.Image.Mirror, digest, src.Requests())
	}
}

// insecure = true on a mirror allows its untrusted TLS certificate; without it the pull fails and
// says which setting to change.
func TestImageInsecureMirror(t *testing.T) {
	src := sourcetest.NewRegistry(t)
	tlsMirror := httptest.NewUnstartedServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	tlsMirror.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	tlsMirror.StartTLS()
	t.Cleanup(tlsMirror.Close)
	host := strings.TrimPrefix(tlsMirror.URL, "https://")
	digest, err := imagebuild.Push(ctx(t), catalogImage(t, "catalog"), host+"/catalogs/demo:v1",
		imagebuild.WithTransport(tlsMirror.Client().Transport), imagebuild.WithKeychain(anonKeychain{}))
	if err != nil {
		t.Fatal(err)
	}
	ref := src.Host + "/catalogs/demo@" + digest.DigestStr()
	for _, insecure := range []bool{false, true} {
		u, path := mirroredUnpacker(t, fmt.Sprintf("[[registry]]\nlocation = %q\nblocked = true\n[[registry.mirror]]\nlocation = %q\ninsecure = %v\n", src.Host, host, insecure))
		res, err := u.Unpack(ctx(t), "catalog/demo", imageSrc(ref), catalogOpts)
		if !insecure {
			wantError(t, err, KindUnreachable, "mirror "+host, "insecure = true", path)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if res.ResolvedSource.Image.Mirror != digest.String() {
			t.Errorf("mirror %q, want %s", res.ResolvedSource.Image.Mirror, digest)
		}
	}
	if len(src.Requests()) != 0 {
		t.Errorf("source requests %q, want none", src.Requests())
	}
}

type anonKeychain struct{}

func (anonKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return authn.Anonymous, nil }

// The registries.conf is read again when it changes: a pull follows the new file, and a broken file
// stops pulls (rather than contacting a registry it may block) with a message naming the problem.
func TestImageMirrorConfigurationChanges(t *testing.T) {
	src := sourcetest.NewRegistry(t)
	mirror := sourcetest.NewRegistry(t)
	src.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	digest := mirror.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	u, path := mirroredUnpacker(t, fmt.Sprintf("[[registry]]\nlocation = %q\n", src.Host))
	res, err := u.Unpack(ctx(t), "catalog/a", imageSrc(src.Ref("catalogs/demo:v1")), catalogOpts)
	if err != nil || res.ResolvedSource.Image.Mirror != "" {
		t.Fatalf("before the change: %+v, %v; want the source itself", res, err)
	}

	rewrite := func(conf string, step time.Duration) {
		t.Helper()
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		// The modification time moves on for certain, whatever the file system's granularity.
		at := time.Now().Add(step)
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(fmt.Sprintf("[[registry]]\nlocation = %q\nblocked = true\n[[registry.mirror]]\nlocation = %q\n", src.Host, mirror.Host), time.Hour)
	src.ResetRequests()
	res, err = u.Unpack(ctx(t), "catalog/b", imageSrc(src.Ref("catalogs/demo:v1")), catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	if res.ResolvedSource.Image.Mirror != digest.String() || len(src.Requests()) != 0 {
		t.Errorf("after the change: mirror %q (want %s), source requests %q (want none)", res.ResolvedSource.Image.Mirror, digest, src.Requests())
	}

	rewrite("[[registry]]\nlocation = \"x.local\"\nblockd = true\n", 2*time.Hour)
	_, err = u.Unpack(ctx(t), "catalog/c", imageSrc(src.Ref("catalogs/demo:v1")), catalogOpts)
	wantError(t, err, KindInvalidSource, "cannot read the registry mirror configuration", path, "unknown keys registry.blockd")
}
