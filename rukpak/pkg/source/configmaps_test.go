package source

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func configMap(name string, data map[string]string, binary map[string][]byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Data:       data,
		BinaryData: binary,
	}
}

func cmSrc(entries ...rukpakv1alpha1.ConfigMapSource) rukpakv1alpha1.Source {
	return rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeConfigMaps, ConfigMaps: entries}
}

func cmEntry(name, path string) rukpakv1alpha1.ConfigMapSource {
	return rukpakv1alpha1.ConfigMapSource{ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: name}, Path: path}
}

// The seed example: a ConfigMap with a catalog.json key under path configs; with another
// ConfigMap of binaryData at the root.
func TestConfigMaps(t *testing.T) {
	c := fakeClient(
		configMap("my-catalog-content", map[string]string{"catalog.json": `{"schema":"olm.package","name":"demo"}`}, nil),
		configMap("extras", map[string]string{"README.md": "hi"}, map[string][]byte{"logo.png": {0x89, 'P', 'N', 'G'}}),
	)
	u := newTestUnpacker(t, c)
	src := cmSrc(cmEntry("my-catalog-content", "configs"), cmEntry("extras", ""))
	opts := Options{Namespace: testNamespace}
	res, err := u.Unpack(ctx(t), "catalog/cm", src, opts)
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, res.Dir, "configs/", `configs/catalog.json={"schema":"olm.package","name":"demo"}`, "README.md=hi", "logo.png=\x89PNG")
	if got := res.ResolvedSource.ConfigMaps; len(got) != 2 || got[0].Name != "my-catalog-content" || got[0].ResourceVersion == "" {
		t.Errorf("resolved %+v", got)
	}

	again, err := u.Unpack(ctx(t), "catalog/cm", src, Options{Namespace: testNamespace, Previous: &res.ResolvedSource})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Unchanged || again.Dir != res.Dir {
		t.Errorf("same ConfigMaps: Unchanged=%v sameDir=%v", again.Unchanged, again.Dir == res.Dir)
	}

	// Another path for the same ConfigMaps is other content, even at the same versions.
	moved, err := u.Unpack(ctx(t), "catalog/cm", cmSrc(cmEntry("my-catalog-content", "fbc/demo"), cmEntry("extras", "")), Options{Namespace: testNamespace, Previous: &res.ResolvedSource})
	if err != nil {
		t.Fatal(err)
	}
	if moved.Unchanged {
		t.Error("a changed path reported Unchanged")
	}
	wantTree(t, moved.Dir, "fbc/", "fbc/demo/", `fbc/demo/catalog.json={"schema":"olm.package","name":"demo"}`, "README.md=hi", "logo.png=\x89PNG")
}

func TestConfigMapsErrors(t *testing.T) {
	c := fakeClient(
		configMap("a", map[string]string{"catalog.json": "{}"}, nil),
		configMap("b", map[string]string{"catalog.json": "{}"}, nil),
		configMap("dir", map[string]string{"configs": "I am a file"}, nil),
	)
	u := newTestUnpacker(t, c)
	opts := Options{Namespace: testNamespace}

	_, err := u.Unpack(ctx(t), "catalog/x", cmSrc(cmEntry("a", "configs"), cmEntry("missing", "")), opts)
	if e := wantError(t, err, KindNotFound, `ConfigMap "missing" not found in namespace "olmv1-system" (check spec.source.configMaps[1].configMap.name`); !e.Retryable {
		t.Error("a missing ConfigMap may be created later: want retryable")
	}

	_, err = u.Unpack(ctx(t), "catalog/x", cmSrc(cmEntry("a", "configs"), cmEntry("b", "configs/")), opts)
	wantError(t, err, KindInvalidSource, `ConfigMaps "a" and "b" both write "configs/catalog.json"`, "spec.source.configMaps[1].path")

	_, err = u.Unpack(ctx(t), "catalog/x", cmSrc(cmEntry("a", "configs"), cmEntry("dir", "")), opts)
	wantError(t, err, KindInvalidSource, `ConfigMaps "a" and "dir" both write "configs"`)

	_, err = u.Unpack(ctx(t), "catalog/x", cmSrc(cmEntry("a", "../escape")), opts)
	wantError(t, err, KindInvalidSource, `spec.source.configMaps[0].path "../escape" must be a relative path`)

	_, err = u.Unpack(ctx(t), "catalog/x", cmSrc(cmEntry("a", "")), Options{})
	wantError(t, err, KindInternal, "no namespace given")

	_, err = newTestUnpacker(t, nil).Unpack(ctx(t), "catalog/x", cmSrc(cmEntry("a", "")), opts)
	wantError(t, err, KindInternal, "no Kubernetes client")
	assertCacheEmpty(t, u)
}
