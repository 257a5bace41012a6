package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestEveryCommandHasExamples: --help of every command shows an example.
func TestEveryCommandHasExamples(t *testing.T) {
	root := NewRootCommand(Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	for _, path := range [][]string{
		{"bundle", "validate"}, {"bundle", "push"}, {"catalog", "init"}, {"catalog", "add-bundle"}, {"catalog", "render"},
		{"catalog", "validate"}, {"catalog", "push"}, {"catalog", "add"}, {"catalog", "list"}, {"search"}, {"install"},
		{"status"}, {"approve"}, {"uninstall"}, {"pause"}, {"resume"}, {"catalog", "pause"}, {"catalog", "resume"},
	} {
		cmd, _, err := root.Find(path)
		if err != nil {
			t.Fatalf("%v: %v", path, err)
		}
		if cmd.Example == "" || !strings.Contains(cmd.Example, "kubectl olmv1 "+path[len(path)-1]) && !strings.Contains(cmd.Example, "kubectl olmv1 "+strings.Join(path, " ")) {
			t.Errorf("%v has no example of itself:\n%s", path, cmd.Example)
		}
	}
}
