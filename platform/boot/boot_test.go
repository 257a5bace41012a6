package boot

import (
	"flag"
	"testing"

	"go.uber.org/zap/zapcore"
)

func TestParseLevel(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    zapcore.Level
		wantErr bool
	}{
		{in: "debug", want: zapcore.DebugLevel},
		{in: "INFO", want: zapcore.InfoLevel},
		{in: "", want: zapcore.InfoLevel},
		{in: "error", want: zapcore.ErrorLevel},
		{in: "4", want: zapcore.Level(-4)},
		{in: "-1", wantErr: true},
		{in: "loud", wantErr: true},
	} {
		got, err := parseLevel(tc.in)
		if (err != nil) != tc.wantErr {
			t.Fatalf("parseLevel(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
		}
		if !tc.wantErr && got != tc.want {
			t.Errorf("parseLevel(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestBindFlagsDefaultsAreLoopback(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindFlags(fs, "catalogd", 8443, 8081)
	if err := fs.Parse([]string{"--leader-elect", "--log-level=debug"}); err != nil {
		t.Fatal(err)
	}
	if o.MetricsBindAddress != "127.0.0.1:8443" || o.HealthProbeBindAddress != "127.0.0.1:8081" {
		t.Errorf("defaults must listen on loopback, got metrics %q probes %q", o.MetricsBindAddress, o.HealthProbeBindAddress)
	}
	if !o.LeaderElect || o.LogLevel != "debug" || o.Component != "catalogd" {
		t.Errorf("flags not bound: %+v", o)
	}
}
