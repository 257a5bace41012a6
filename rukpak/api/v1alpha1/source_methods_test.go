package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSourcePollInterval(t *testing.T) {
	every := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	for name, tc := range map[string]struct {
		src  Source
		want time.Duration
	}{
		"empty":                       {src: Source{}, want: 0},
		"image without pollInterval":  {src: Source{Type: SourceTypeImage, Image: &ImageSource{Ref: "quay.io/x:1"}}, want: 0},
		"image":                       {src: Source{Type: SourceTypeImage, Image: &ImageSource{Ref: "quay.io/x:1", PollInterval: every(10 * time.Minute)}}, want: 10 * time.Minute},
		"http":                        {src: Source{Type: SourceTypeHTTP, HTTP: &HTTPSource{URL: "https://x/c.tgz", PollInterval: every(30 * time.Second)}}, want: 30 * time.Second},
		"git":                         {src: Source{Type: SourceTypeGit, Git: &GitSource{Repository: "https://x/r.git", PollInterval: every(5 * time.Minute)}}, want: 5 * time.Minute},
		"git without pollInterval":    {src: Source{Type: SourceTypeGit, Git: &GitSource{Repository: "https://x/r.git"}}, want: 0},
		"configMaps never poll":       {src: Source{Type: SourceTypeConfigMaps, ConfigMaps: []ConfigMapSource{{ConfigMap: ConfigMapReference{Name: "a"}}}}, want: 0},
		"member set without its type": {src: Source{HTTP: &HTTPSource{URL: "https://x/c.tgz", PollInterval: every(time.Hour)}}, want: time.Hour},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.src.PollInterval(); got != tc.want {
				t.Errorf("PollInterval() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestResolvedSourceString(t *testing.T) {
	for name, tc := range map[string]struct {
		rs   *ResolvedSource
		want string
	}{
		"nil": {rs: nil, want: "unknown source"},
		"image": {rs: &ResolvedSource{Type: SourceTypeImage, Image: &ResolvedImageSource{Ref: "quay.io/x@sha256:abc"}},
			want: "image quay.io/x@sha256:abc"},
		// "at", not "@": an scp-like repository already contains "@" (git@github.com:org/repo.git).
		"git": {rs: &ResolvedSource{Type: SourceTypeGit, Git: &ResolvedGitSource{Repository: "git@github.com:org/repo.git", Commit: "0123abcd"}},
			want: "git git@github.com:org/repo.git at 0123abcd"},
		"http with etag": {rs: &ResolvedSource{Type: SourceTypeHTTP, HTTP: &ResolvedHTTPSource{URL: "https://x/c.tgz", ETag: `"e1"`}},
			want: `http https://x/c.tgz etag "e1"`},
		"http without etag": {rs: &ResolvedSource{Type: SourceTypeHTTP, HTTP: &ResolvedHTTPSource{URL: "https://x/c.tgz", LastModified: "Mon"}},
			want: "http https://x/c.tgz"},
		"one configmap": {rs: &ResolvedSource{Type: SourceTypeConfigMaps, ConfigMaps: []ResolvedConfigMapSource{{Name: "a", ResourceVersion: "12"}}},
			want: "configmaps a@12"},
		"configmaps in spec order": {rs: &ResolvedSource{Type: SourceTypeConfigMaps, ConfigMaps: []ResolvedConfigMapSource{{Name: "b", ResourceVersion: "7"}, {Name: "a", ResourceVersion: "12"}}},
			want: "configmaps b@7, a@12"},
		"type without its member": {rs: &ResolvedSource{Type: SourceTypeGit}, want: "Git"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.rs.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}
