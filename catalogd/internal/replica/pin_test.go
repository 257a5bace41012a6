package replica

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func TestPinnedSource(t *testing.T) {
	poll := &metav1.Duration{Duration: time.Minute}
	const digestRef = "reg.example/cat@sha256:0123"
	const commit = "0123456789abcdef0123456789abcdef01234567"
	imgSpec := rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{
		Ref: "reg.example/cat:latest", PullSecret: "pull", InsecureSkipTLSVerify: true, PollInterval: poll}}
	imgResolved := &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ResolvedImageSource{Ref: digestRef}}
	gitSpec := rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.GitSource{
		Repository: "https://git.example/cat.git", Ref: rukpakv1alpha1.GitRef{Branch: "main"}, Directory: "catalog", AuthSecret: "auth", PollInterval: poll}}
	gitResolved := &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.ResolvedGitSource{
		Repository: "https://git.example/cat.git", Commit: commit}}
	httpSpec := rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeHTTP, HTTP: &rukpakv1alpha1.HTTPSource{
		URL: "https://example.com/releases/latest/catalog.json", CASecret: "ca", PollInterval: poll}}
	httpResolved := &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeHTTP, HTTP: &rukpakv1alpha1.ResolvedHTTPSource{
		URL: "https://objects.example.com/signed?x=1", ETag: `"abc"`}}
	cmSpec := rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeConfigMaps, ConfigMaps: []rukpakv1alpha1.ConfigMapSource{
		{ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: "a"}, Path: "configs"}}}
	cmResolved := &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeConfigMaps, ConfigMaps: []rukpakv1alpha1.ResolvedConfigMapSource{
		{Name: "a", ResourceVersion: "7"}}}

	cases := map[string]struct {
		spec     rukpakv1alpha1.Source
		resolved *rukpakv1alpha1.ResolvedSource
		want     rukpakv1alpha1.Source
		wantErr  string
	}{
		"image tag pinned to its digest, settings kept, no polling": {spec: imgSpec, resolved: imgResolved,
			want: rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{
				Ref: digestRef, PullSecret: "pull", InsecureSkipTLSVerify: true}}},
		"image served while the spec moved to git": {spec: gitSpec, resolved: imgResolved,
			want: rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: digestRef}}},
		"git branch pinned to the commit": {spec: gitSpec, resolved: gitResolved,
			want: rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.GitSource{
				Repository: "https://git.example/cat.git", Ref: rukpakv1alpha1.GitRef{Commit: commit}, Directory: "catalog", AuthSecret: "auth"}}},
		"http keeps the spec URL (the resolved one may be a signed redirect)": {spec: httpSpec, resolved: httpResolved,
			want: rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeHTTP, HTTP: &rukpakv1alpha1.HTTPSource{
				URL: "https://example.com/releases/latest/catalog.json", CASecret: "ca"}}},
		"http served while the spec moved to an image": {spec: imgSpec, resolved: httpResolved,
			want: rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeHTTP, HTTP: &rukpakv1alpha1.HTTPSource{URL: "https://objects.example.com/signed?x=1"}}},
		"configmaps keep their paths": {spec: cmSpec, resolved: cmResolved, want: cmSpec},
		"configmaps served while the spec moved to an image": {spec: imgSpec, resolved: cmResolved,
			want: rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeConfigMaps, ConfigMaps: []rukpakv1alpha1.ConfigMapSource{
				{ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: "a"}}}}},
		"no resolved source":   {spec: imgSpec, wantErr: "status.resolvedSource is not set"},
		"image without ref":    {spec: imgSpec, resolved: &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeImage}, wantErr: "no image.ref"},
		"git without a commit": {spec: gitSpec, resolved: &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.ResolvedGitSource{}}, wantErr: "no git.commit"},
		"unknown type":         {spec: imgSpec, resolved: &rukpakv1alpha1.ResolvedSource{Type: "Floppy"}, wantErr: `unsupported type "Floppy"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			specBefore := *c.spec.DeepCopy()
			got, err := PinnedSource(c.spec, c.resolved)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("want error containing %q, got %v", c.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", describeSource(got), describeSource(c.want))
			}
			if !equality.Semantic.DeepEqual(c.spec, specBefore) {
				t.Errorf("PinnedSource modified the spec it was given")
			}
		})
	}
}

func describeSource(s rukpakv1alpha1.Source) any {
	switch {
	case s.Image != nil:
		return *s.Image
	case s.Git != nil:
		return *s.Git
	case s.HTTP != nil:
		return *s.HTTP
	}
	return s.ConfigMaps
}
