package apply

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"sync"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// DefaultChunkSize keeps each release Secret well under the API server's 1 MiB object limit.
const DefaultChunkSize = 768 << 10

const (
	chunksAnnotation = "core.rukpak.io/release-chunks"
	chunkOwner       = "rukpak-release-chunk"
)

// NewSecretsStorage is Helm release storage backed by Secrets in namespace, keeping at most
// maxHistory revisions per release. A release whose encoding fits in one Secret is stored exactly as
// Helm's own Secrets driver stores it (so `helm history` reads it); a larger one is split: the first
// Secret holds the first chunk and says how many there are, the others hold the rest.
func NewSecretsStorage(cs kubernetes.Interface, namespace string, maxHistory int) *storage.Storage {
	s := storage.Init(&ChunkedSecrets{Client: cs.CoreV1().Secrets(namespace), Namespace: namespace, ChunkSize: DefaultChunkSize})
	s.MaxHistory = maxHistory
	return s
}

// ChunkedSecrets is a Helm storage driver that splits large releases over several Secrets.
//
// A record that cannot be decoded, or whose content contradicts its Secret's name or labels, is
// reported as a *CorruptReleaseError (records.go) by Get, List and Query, never skipped; Create
// refuses a name taken by a Secret that is not one of the release's readable records, except one
// set aside (owner=rukpak-set-aside), for which it returns a *SetAsideError.
type ChunkedSecrets struct {
	Client typedcorev1.SecretInterface
	// Namespace is the Secrets' namespace, for messages.
	Namespace string
	ChunkSize int

	// heads is, per record key, the resourceVersion and chunk count of its head Secret as this
	// driver last read or wrote it (a headSeen): an update is sent at that resourceVersion without
	// reading the Secret first, and reads it only when that resourceVersion is stale (someone else
	// changed or deleted it) or unknown.
	heads sync.Map
}

// headSeen is what ChunkedSecrets.heads holds for a record.
type headSeen struct {
	resourceVersion string
	// chunks is how many Secrets the record has (1: the head alone), math.MaxInt when its head's
	// count cannot be read.
	chunks int
}

// seen remembers head s as the record's current head Secret.
func (d *ChunkedSecrets) seen(s *corev1.Secret) {
	if s == nil || s.ResourceVersion == "" {
		return
	}
	d.heads.Store(s.Name, headSeen{resourceVersion: s.ResourceVersion, chunks: chunkCount(s)})
}

// chunkCount is how many Secrets head s says its record has: 1 without the annotation,
// math.MaxInt when the annotation cannot be read (every chunk beyond a new count is then deleted).
func chunkCount(s *corev1.Secret) int {
	a, ok := s.Annotations[chunksAnnotation]
	if !ok {
		return 1
	}
	if n, err := strconv.Atoi(a); err == nil && n >= 1 {
		return n
	}
	return math.MaxInt
}

var _ driver.Driver = (*ChunkedSecrets)(nil)

// Name implements driver.Driver.
func (d *ChunkedSecrets) Name() string { return driver.SecretsDriverName }

// Get implements driver.Driver.
func (d *ChunkedSecrets) Get(key string) (*release.Release, error) {
	s, err := d.Client.Get(context.TODO(), key, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, driver.ErrReleaseNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get: failed to get %q: %w", key, err)
	}
	return d.decodeSecret(s)
}

// List implements driver.Driver.
func (d *ChunkedSecrets) List(filter func(*release.Release) bool) ([]*release.Release, error) {
	return d.list(labels.Set{"owner": "helm"}, filter)
}

// Query implements driver.Driver.
func (d *ChunkedSecrets) Query(l map[string]string) ([]*release.Release, error) {
	set := labels.Set{}
	for k, v := range l {
		set[k] = v
	}
	out, err := d.list(set, nil)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return out, nil
}

func (d *ChunkedSecrets) list(set labels.Set, filter func(*release.Release) bool) ([]*release.Release, error) {
	list, err := d.Client.List(context.TODO(), metav1.ListOptions{LabelSelector: labels.SelectorFromSet(set).String()})
	if err != nil {
		return nil, fmt.Errorf("list: failed to list release Secrets: %w", err)
	}
	var out []*release.Release
	var bad *CorruptReleaseError
	for i := range list.Items {
		r, err := d.decodeSecret(&list.Items[i])
		var ce *CorruptReleaseError
		switch {
		case errors.As(err, &ce) && bad == nil:
			bad = ce
			continue
		case errors.As(err, &ce):
			bad.Others = append(bad.Others, ce.Secret)
			continue
		case err != nil:
			return nil, err
		}
		if filter == nil || filter(r) {
			out = append(out, r)
		}
	}
	if bad != nil {
		return nil, bad
	}
	return out, nil
}

// Create implements driver.Driver.
func (d *ChunkedSecrets) Create(key string, rls *release.Release) error {
	return d.write(key, rls, false)
}

// Update implements driver.Driver.
func (d *ChunkedSecrets) Update(key string, rls *release.Release) error {
	return d.write(key, rls, true)
}

// Delete implements driver.Driver.
func (d *ChunkedSecrets) Delete(key string) (*release.Release, error) {
	r, err := d.Get(key)
	if err != nil {
		return nil, err
	}
	if err := d.deleteChunks(key, 2); err != nil {
		return nil, err
	}
	d.heads.Delete(key)
	if err := d.Client.Delete(context.TODO(), key, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	return r, nil
}

// write stores rls as key: a new record (Create), or over the one there (Update). A record that
// fits in one Secret, nearly every one, costs one request to create (its name is looked at only
// when it is taken) and one to update when this driver read or wrote it last (replace at the
// resourceVersion it saw; two, read then replace, when it did not or someone else changed it
// since); chunks are deleted only when the record had more of them than it has now.
func (d *ChunkedSecrets) write(key string, rls *release.Release, update bool) error {
	data, err := encodeRelease(rls)
	if err != nil {
		return fmt.Errorf("encoding release %q: %w", key, err)
	}
	size := d.ChunkSize
	if size <= 0 {
		size = DefaultChunkSize
	}
	var chunks []string
	for len(data) > size {
		chunks, data = append(chunks, data[:size]), data[size:]
	}
	chunks = append(chunks, data)
	head := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: key,
			Labels: map[string]string{
				"name": rls.Name, "owner": "helm", "status": string(rls.Info.Status), "version": strconv.Itoa(rls.Version),
			},
		},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": []byte(chunks[0])},
	}
	if len(chunks) > 1 {
		head.Annotations = map[string]string{chunksAnnotation: strconv.Itoa(len(chunks))}
	}
	if update {
		return d.replace(key, rls.Name, head, chunks)
	}
	if len(chunks) == 1 {
		return d.createOne(key, rls.Name, head)
	}
	// Before any chunk is written: a taken name may belong to a Secret set aside, whose chunks
	// must stay as they are.
	if err := d.checkFree(key, rls.Name); err != nil {
		return err
	}
	if err := d.putChunks(key, rls.Name, chunks); err != nil {
		return err
	}
	created, err := d.Client.Create(context.TODO(), head, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return driver.ErrReleaseExists
	}
	if err != nil {
		return fmt.Errorf("storing release %q: %w", key, err)
	}
	d.seen(created)
	// Chunks of a longer record that a crash left behind, before its head was written.
	return d.deleteChunks(key, len(chunks)+1)
}

// createOne creates head, a record that fits in one Secret, in one request; only when its name is
// taken does it look at what holds it (checkFree's errors). Chunks that a crash left behind under
// this name stay until the record is deleted (Delete deletes every chunk): nothing reads them.
func (d *ChunkedSecrets) createOne(key, name string, head *corev1.Secret) error {
	for attempt := 0; ; attempt++ {
		created, err := d.Client.Create(context.TODO(), head, metav1.CreateOptions{})
		if err == nil {
			d.seen(created)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("storing release %q: %w", key, err)
		}
		if err := d.checkFree(key, name); err != nil || attempt > 0 {
			if err == nil {
				err = driver.ErrReleaseExists
			}
			return err
		}
		// Deleted between the two requests: create it again, once.
	}
}

// replace writes head and its chunks over the record key: its chunks first, so that the head never
// points at chunks that do not exist yet, then the head at the resourceVersion this driver last saw
// (read first when it saw none, or when someone else changed the Secret since), then the chunks the
// record had beyond its new count. A record that is not there is created.
func (d *ChunkedSecrets) replace(key, name string, head *corev1.Secret, chunks []string) error {
	if v, ok := d.heads.Load(key); ok {
		seen := v.(headSeen)
		if err := d.putChunks(key, name, chunks); err != nil {
			return err
		}
		head.ResourceVersion = seen.resourceVersion
		updated, err := d.Client.Update(context.TODO(), head, metav1.UpdateOptions{})
		switch {
		case err == nil:
			d.seen(updated)
			return d.dropChunksBeyond(key, seen.chunks, len(chunks))
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			// Changed or deleted by someone else since: read what is there, as below.
			d.heads.Delete(key)
		default:
			return fmt.Errorf("storing release %q: %w", key, err)
		}
	}
	head.ResourceVersion = ""
	cur, err := d.Client.Get(context.TODO(), key, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cur = nil
	case err != nil:
		return fmt.Errorf("storing release %q: reading its Secret: %w", key, err)
	}
	if err := d.putChunks(key, name, chunks); err != nil {
		return err
	}
	var written *corev1.Secret
	if cur == nil {
		written, err = d.Client.Create(context.TODO(), head, metav1.CreateOptions{})
	} else {
		head.ResourceVersion = cur.ResourceVersion
		written, err = d.Client.Update(context.TODO(), head, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("storing release %q: %w", key, err)
	}
	d.seen(written)
	had := 1
	if cur != nil {
		had = chunkCount(cur)
	}
	return d.dropChunksBeyond(key, had, len(chunks))
}

// dropChunksBeyond deletes the chunks of key beyond its new count now, when it had more.
func (d *ChunkedSecrets) dropChunksBeyond(key string, had, now int) error {
	if had > now {
		return d.deleteChunks(key, now+1)
	}
	return nil
}

// putChunks writes chunks 2 and up of a record (the head holds the first).
func (d *ChunkedSecrets) putChunks(key, name string, chunks []string) error {
	for i := 1; i < len(chunks); i++ {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: chunkName(key, i+1), Labels: map[string]string{"owner": chunkOwner, "name": name}},
			Type:       "helm.sh/release.v1.chunk",
			Data:       map[string][]byte{"chunk": []byte(chunks[i])},
		}
		if err := d.put(s); err != nil {
			return fmt.Errorf("storing chunk %d of release %q: %w", i+1, key, err)
		}
	}
	return nil
}

// checkFree reports whether a new record may be created as key: driver.ErrReleaseExists when a
// readable record of release name has it, a *SetAsideError when a Secret set aside has it, and a
// *CorruptReleaseError when any other Secret has it (e.g. a record whose labels were removed, so
// that the release's history no longer shows it).
func (d *ChunkedSecrets) checkFree(key, name string) error {
	cur, err := d.Client.Get(context.TODO(), key, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("checking whether release Secret %s exists: %w", key, err)
	case cur.Labels["owner"] == SetAsideOwner:
		return &SetAsideError{Secret: key}
	case cur.Labels["owner"] == releaseOwner && cur.Labels["name"] == name:
		if _, err := d.decodeSecret(cur); err != nil {
			return err
		}
		return driver.ErrReleaseExists
	}
	return &CorruptReleaseError{Namespace: d.Namespace, Secret: key, Problem: fmt.Sprintf(
		"its labels (owner=%q, name=%q) leave it out of the history of release %q, so rukpak cannot tell which revision is installed",
		cur.Labels["owner"], cur.Labels["name"], name)}
}

// put creates s, or replaces it when it exists.
func (d *ChunkedSecrets) put(s *corev1.Secret) error {
	_, err := d.Client.Create(context.TODO(), s, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur, err := d.Client.Get(context.TODO(), s.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	s.ResourceVersion = cur.ResourceVersion
	_, err = d.Client.Update(context.TODO(), s, metav1.UpdateOptions{})
	return err
}

// deleteChunks deletes the chunk Secrets of key numbered from and up.
func (d *ChunkedSecrets) deleteChunks(key string, from int) error {
	for i := from; ; i++ {
		err := d.Client.Delete(context.TODO(), chunkName(key, i), metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("deleting chunk %d of release %q: %w", i, key, err)
		}
	}
}

func chunkName(key string, i int) string { return key + ".c" + strconv.Itoa(i) }

// decodeSecret reads the release recorded in head Secret s (and its chunks). A record that
// cannot be decoded or checked is a *CorruptReleaseError; failing to read a chunk that exists is
// a plain error (retrying may help).
func (d *ChunkedSecrets) decodeSecret(s *corev1.Secret) (*release.Release, error) {
	bad := func(format string, args ...any) error {
		return &CorruptReleaseError{Namespace: d.Namespace, Secret: s.Name, Problem: fmt.Sprintf(format, args...)}
	}
	raw, ok := s.Data["release"]
	if !ok {
		return nil, bad("it has no data key \"release\"")
	}
	data := string(raw)
	if a, ok := s.Annotations[chunksAnnotation]; ok {
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 {
			return nil, bad("its annotation %s is %q, not a number of chunks", chunksAnnotation, a)
		}
		var b bytes.Buffer
		b.WriteString(data)
		for i := 2; i <= n; i++ {
			c, err := d.Client.Get(context.TODO(), chunkName(s.Name, i), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil, bad("its chunk %d of %d, Secret %s, is missing", i, n, chunkName(s.Name, i))
			}
			if err != nil {
				return nil, fmt.Errorf("reading chunk %d of %d of release Secret %s: %w", i, n, s.Name, err)
			}
			b.Write(c.Data["chunk"])
		}
		data = b.String()
	}
	r, err := decodeRelease(data)
	if err != nil {
		return nil, bad("%v", err)
	}
	if problem := checkRecord(s, r); problem != "" {
		return nil, bad("%s", problem)
	}
	d.seen(s)
	r.Labels = map[string]string{}
	for k, v := range s.Labels {
		switch k {
		case "name", "owner", "status", "version", "createdAt", "modifiedAt":
		default:
			r.Labels[k] = v
		}
	}
	return r, nil
}

// gzipWriters are reused gzip writers at BestCompression: a new one allocates about 800 KB of
// compressor state, and every revision write (pending, deployed, healthy, superseded) encodes a
// release, 1.7 GB of allocations for 300 installs and upgrades.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestCompression) // a valid level: no error
	return w
}}

// encodeRelease is Helm's encoding: base64 of gzipped JSON.
func encodeRelease(rls *release.Release) (string, error) {
	j, err := json.Marshal(rls)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	w := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(w)
	w.Reset(&b)
	if _, err := w.Write(j); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b.Bytes()), nil
}

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// decodeRelease reverses encodeRelease (plain JSON, not gzipped, is accepted too, as Helm does),
// saying which layer is broken.
func decodeRelease(data string) (*release.Release, error) {
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, fmt.Errorf("its data is not base64 (%v)", err)
	}
	if len(b) > 3 && bytes.Equal(b[:3], gzipMagic) {
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("its data is not a gzip stream (%v)", err)
		}
		defer r.Close()
		if b, err = io.ReadAll(r); err != nil {
			return nil, fmt.Errorf("its gzipped data is damaged or truncated (%v)", err)
		}
	}
	var rls release.Release
	if err := json.Unmarshal(b, &rls); err != nil {
		return nil, fmt.Errorf("its data is not a JSON release record (%v)", err)
	}
	return &rls, nil
}

// sortByVersion orders releases oldest first.
func sortByVersion(rs []*release.Release) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Version < rs[j].Version })
}
