package fbc

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

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

// BenchmarkLoadVersusDeclcfg alternates a cold Load and declcfg.LoadFS on community-v4.20 in the
// same loop, so that both see the same machine load, and reports the ratio of their total times
// (the target: ratio <= 1.0) and the peak heap of each.
func BenchmarkLoadVersusDeclcfg(b *testing.B) {
	dir := os.DirFS(testdataDir(b, "catalogs/community-v4.20"))
	var ours, ref time.Duration
	for b.Loop() {
		ForgetValidatedPackages()
		runtime.GC()
		start := time.Now()
		if _, err := Load(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		runtime.GC()
		start = time.Now()
		if _, err := declcfg.LoadFS(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
		ref += time.Since(start)
	}
	b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "load-ms/op")
	b.ReportMetric(float64(ref.Milliseconds())/float64(b.N), "declcfg-ms/op")
	b.ReportMetric(float64(ours)/float64(ref), "ratio")
}
