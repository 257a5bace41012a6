package apiservertest

import (
	"fmt"
	"os"
	"testing"
)

// Main is a suite's TestMain: it starts the API server as opts say, calls setup (which may be nil)
// with the running Suite, runs the tests, runs the cleanups setup registered and stops the API
// server. It returns the exit code for os.Exit:
//
//	func TestMain(m *testing.M) {
//		os.Exit(apiservertest.Main(m, "rukpak integration tests", apiservertest.Options{...}, func(s *apiservertest.Suite) error {
//			suite = s
//			return nil
//		}))
//	}
//
// When the API server cannot start (e.g. $KUBEBUILDER_ASSETS is not set), setup fails or a cleanup
// fails, it prints one "FAIL: <name>: <what to do>" line and the suite fails; an error stopping the
// API server is only printed.
func Main(m *testing.M, name string, opts Options, setup func(*Suite) error) int {
	s, err := Start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s: %v\n", name, err)
		return 1
	}
	defer func() {
		if err := s.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping kube-apiserver and etcd: %v\n", err)
		}
	}()
	code := 1
	if setup != nil {
		err = setup(s)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s: %v\n", name, err)
	} else {
		code = m.Run()
	}
	if err := s.runCleanups(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s: %v\n", name, err)
		code = 1
	}
	return code
}

// StartForTest starts the API server for one test, as opts say, and stops it when the test ends; the
// test fails when the API server cannot start (e.g. $KUBEBUILDER_ASSETS is not set).
func StartForTest(t testing.TB, opts Options) *Suite {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Logf("stopping kube-apiserver and etcd: %v", err)
		}
	})
	return s
}
