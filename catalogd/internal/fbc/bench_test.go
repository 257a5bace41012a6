package fbc

import (
	"context"
	"os"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// BenchmarkLoadCommunity parses, validates, canonicalises and hashes community-v4.20, validating
// every package (cold, as the first Load of a process).
func BenchmarkLoadCommunity(b *testing.B) {
	dir := os.DirFS(testdataDir(b, "catalogs/community-v4.20"))
	b.ReportAllocs()
	for b.Loop() {
		ForgetValidatedPackages()
		if _, err := Load(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadCommunityWarm is BenchmarkLoadCommunity when every package was validated before
// (another catalog with the same packages, or an update that changed nothing in them).
func BenchmarkLoadCommunityWarm(b *testing.B) {
	dir := os.DirFS(testdataDir(b, "catalogs/community-v4.20"))
	if _, err := Load(context.Background(), dir); err != nil {
		b.Fatal(err)
	}
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
