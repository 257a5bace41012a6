package main

import (
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

func TestLoadOrRotateCA(t *testing.T) {
	cs := fake.NewClientset()
	now := time.Now()
	ca1, prev, err := loadOrRotateCA(t.Context(), cs, "sys", now)
	if err != nil || ca1 == nil || len(prev) != 0 {
		t.Fatalf("first start: ca %v previous %d err %v", ca1 != nil, len(prev), err)
	}
	again, _, err := loadOrRotateCA(t.Context(), cs, "sys", now.Add(time.Hour))
	if err != nil || !again.Cert.Equal(ca1.Cert) {
		t.Fatalf("a restart must reuse the stored CA (err %v)", err)
	}
	// Past two thirds of its validity the CA is replaced, and the old one stays trusted.
	later := now.Add(caValidity * 3 / 4)
	ca2, prev, err := loadOrRotateCA(t.Context(), cs, "sys", later)
	if err != nil || ca2.Cert.Equal(ca1.Cert) || len(prev) != 1 || !prev[0].Cert.Equal(ca1.Cert) {
		t.Fatalf("rotation: new CA %v, previous %d, err %v", ca2 != nil && !ca2.Cert.Equal(ca1.Cert), len(prev), err)
	}
	_, prev, err = loadOrRotateCA(t.Context(), cs, "sys", later.Add(time.Hour))
	if err != nil || len(prev) != 1 {
		t.Fatalf("after rotation the previous CA is still passed until it expires: %d (%v)", len(prev), err)
	}
}
