package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestUnpackConcurrency(t *testing.T) {
	dir := t.TempDir()
	n := 0
	write := func(content string) string {
		n++
		p := filepath.Join(dir, "memory.max."+strconv.Itoa(n))
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		flag    int
		path    string
		want    int
		wantErr bool
	}{
		{"flag wins", 3, write("268435456\n"), 3, false},
		{"negative flag", -1, "", 0, true},
		{"no cgroup file", 0, filepath.Join(dir, "absent"), 2, false},
		{"no limit", 0, write("max\n"), 2, false},
		{"garbage", 0, write("lots\n"), 2, false},
		{"256 MiB", 0, write("268435456\n"), 2, false},
		{"384 MiB", 0, write("402653184\n"), 4, false},
		{"128 MiB", 0, write("134217728\n"), 1, false},
		{"64 MiB", 0, write("67108864\n"), 1, false},
		{"8 GiB", 0, write("8589934592\n"), 8, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := unpackConcurrency(tc.flag, tc.path)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("unpackConcurrency(%d) = %d, %v; want %d (error %v)", tc.flag, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
