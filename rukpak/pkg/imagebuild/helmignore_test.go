package imagebuild

import (
	"testing"
)

func TestHelmIgnoreRules(t *testing.T) {
	var rules helmIgnoreRules
	for _, line := range []string{
		"# a comment",
		"",
		".git/",
		"*.bak",
		"docs/*.md",
		"/top.txt",
		"build/out/",
	} {
		p, err := parseHelmIgnoreLine(line)
		if err != nil {
			t.Fatalf("parse %q: %v", line, err)
		}
		if p != nil {
			rules = append(rules, *p)
		}
	}
	rules = append(rules, helmIgnorePattern{glob: "templates/.?*", fullPath: true})

	tests := []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{".git", true, true},
		{"sub/.git", true, true},
		{".git", false, false}, // dir-only pattern, a file of that name stays
		{"values.bak", false, true},
		{"templates/deploy.yaml.bak", false, true},
		{"docs/readme.md", false, true},
		{"docs/sub/readme.md", false, false},
		{"readme.md", false, false},
		{"top.txt", false, true},
		{"sub/top.txt", false, false},
		{"build/out", true, true},
		{"build/out", false, false},
		{"templates/.hidden.yaml", false, true},
		{"templates/deploy.yaml", false, false},
		{"Chart.yaml", false, false},
	}
	for _, tt := range tests {
		if got := rules.ignored(tt.rel, tt.isDir); got != tt.want {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", tt.rel, tt.isDir, got, tt.want)
		}
	}

	for _, bad := range []string{"!keep.txt", "docs/**/x", "[abc"} {
		if _, err := parseHelmIgnoreLine(bad); err == nil {
			t.Errorf("parse %q: got no error", bad)
		}
	}
}
