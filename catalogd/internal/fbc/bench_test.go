package fbc

import (
	"context"
	"os"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// BenchmarkLoadCommunity parses, validates, canonicalises and hashes community-v4.20.
func BenchmarkLoadCommunity(b *testing.B) {
	dir := os.DirFS(testdataDir(b, "catalogs/community-v4.20"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeclcfgLoadFSCommunity is the reference: operator-registry's declcfg.LoadFS alone on the
// same directory (no validation, no canonical form, no hash).
func BenchmarkDeclcfgLoadFSCommunity(b *testing.B) {
	dir := os.DirFS(testdataDir(b, "catalogs/community-v4.20"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := declcfg.LoadFS(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
	}
}
