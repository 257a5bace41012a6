package chart

import (
	"slices"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/rukpak/pkg/source/mirrors"
)

const testRegistriesConf = `[[registry]]
location = "quay.io/org"
blocked = true

[[registry.mirror]]
location = "mirror.example.com/org"
pull-from-mirror = "digest-only"
`

// registryMirrors.registriesConf becomes a ConfigMap mounted (as a directory, so that updates
// arrive) into catalogd and rukpak, with --registries-conf pointing at it; the mirror sets are
// listed (never watched) unless imageMirrorSets is false. Lint passes with it.
func TestRegistryMirrors(t *testing.T) {
	dir, ch := loadChart(t)
	vals := map[string]any{"registryMirrors": map[string]any{"registriesConf": testRegistriesConf}}
	if findings := Lint(dir, vals); len(findings) > 0 {
		t.Errorf("helm lint (strict) findings:\n%s", strings.Join(findings, "\n"))
	}
	objs := render(t, ch, vals)
	cm := mustGet(t, objs, "ConfigMap/olmv1-system/registries-conf")
	data := str(cm, "data", "registries.conf")
	if strings.TrimSpace(data) != strings.TrimSpace(testRegistriesConf) {
		t.Errorf("ConfigMap data:\n%s\nwant:\n%s", data, testRegistriesConf)
	}
	if _, err := mirrors.Parse([]byte(data), "ConfigMap registries-conf"); err != nil {
		t.Errorf("the rendered registries.conf does not parse: %v", err)
	}
	for _, name := range []string{"catalogd", "rukpak"} {
		d := mustGet(t, objs, "Deployment/olmv1-system/"+name)
		c := list(d, "spec", "template", "spec", "containers")[0]
		if args := list(c, "args"); !slices.Contains(args, any("--registries-conf=/etc/olmv1/registries/registries.conf")) || slices.Contains(args, any("--image-mirror-sets=false")) {
			t.Errorf("%s args %v: want --registries-conf and the mirror sets on", name, args)
		}
		mounted := false
		for _, m := range list(c, "volumeMounts") {
			if str(m, "name") == "registries-conf" {
				mounted = str(m, "mountPath") == "/etc/olmv1/registries" && get(m, "subPath") == nil && get(m, "readOnly") == true
			}
		}
		if !mounted {
			t.Errorf("%s: registries-conf not mounted read-only as a directory at /etc/olmv1/registries: %v", name, list(c, "volumeMounts"))
		}
		vol := false
		for _, v := range list(d, "spec", "template", "spec", "volumes") {
			vol = vol || str(v, "configMap", "name") == "registries-conf"
		}
		if !vol {
			t.Errorf("%s: no volume of ConfigMap registries-conf", name)
		}
		if !listsMirrorSets(mustGet(t, objs, "ClusterRole//olmv1-"+name)) {
			t.Errorf("%s ClusterRole cannot list the mirror sets", name)
		}
	}

	// Defaults: no file, no ConfigMap; the mirror sets are followed. Off: neither the rule nor the lists.
	objs = render(t, ch, nil)
	if n := len(ofKind(objs, "ConfigMap")); n != 0 {
		t.Errorf("%d ConfigMaps rendered without registryMirrors.registriesConf", n)
	}
	objs = render(t, ch, map[string]any{"registryMirrors": map[string]any{"imageMirrorSets": false}})
	for _, name := range []string{"catalogd", "rukpak"} {
		args := list(list(mustGet(t, objs, "Deployment/olmv1-system/"+name), "spec", "template", "spec", "containers")[0], "args")
		if !slices.Contains(args, any("--image-mirror-sets=false")) || slices.ContainsFunc(args, func(a any) bool { return strings.HasPrefix(a.(string), "--registries-conf") }) {
			t.Errorf("%s args %v: want --image-mirror-sets=false and no --registries-conf", name, args)
		}
		if listsMirrorSets(mustGet(t, objs, "ClusterRole//olmv1-"+name)) {
			t.Errorf("%s may list the mirror sets with imageMirrorSets=false", name)
		}
	}

	if _, err := Render(ch, map[string]any{"registryMirrors": map[string]any{"registriesConf": 42}}, RenderOptions{}); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Errorf("registriesConf: 42: want a values schema error, got %v", err)
	}
	if _, err := Render(ch, map[string]any{"registryMirrors": map[string]any{"mirrors": []any{}}}, RenderOptions{}); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Errorf("registryMirrors.mirrors: want a values schema error, got %v", err)
	}
}

func listsMirrorSets(cr map[string]any) bool {
	for _, r := range list(cr, "rules") {
		if slices.Contains(list(r, "apiGroups"), any("config.openshift.io")) {
			return slices.Equal(list(r, "resources"), []any{"imagedigestmirrorsets", "imagetagmirrorsets"}) && slices.Equal(list(r, "verbs"), []any{"list"})
		}
	}
	return false
}
