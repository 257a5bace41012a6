package storage

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/olmv1/olmv1/catalogd/internal/fbc"
)

// BenchmarkPut is the store's share of BenchmarkUnpackParseIndex: write all.json and the index of
// community-v4.20, sync them, and swap them in.
func BenchmarkPut(b *testing.B) {
	cat, err := fbc.Load(context.Background(), os.DirFS(communityDir(b)))
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(cat.Size)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Put("community-"+strconv.Itoa(i), cat); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
