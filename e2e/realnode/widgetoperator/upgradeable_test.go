package main

import (
	"testing"
	"time"
)

func TestUpgradeableCondition(t *testing.T) {
	now := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)
	if c := upgradeableCondition("", now); c["status"] != "True" || c["reason"] != "Ready" || c["lastTransitionTime"] != "2026-12-04T22:00:00Z" {
		t.Errorf("without a hold: %v", c)
	}
	if c := upgradeableCondition("migrating", now); c["status"] != "False" || c["reason"] != HoldReason || c["message"] != "migrating" {
		t.Errorf("with a hold: %v", c)
	}
}

func TestWithCondition(t *testing.T) {
	other := map[string]any{"type": "Ready", "status": "True"}
	old := map[string]any{"type": "Upgradeable", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z", "message": "a"}
	now := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)

	got := withCondition(nil, upgradeableCondition("", now))
	if len(got) != 1 || got[0].(map[string]any)["status"] != "True" {
		t.Errorf("appended: %v", got)
	}
	got = withCondition([]any{other, old}, upgradeableCondition("b", now))
	if len(got) != 2 || got[0].(map[string]any)["type"] != "Ready" {
		t.Fatalf("replaced in place: %v", got)
	}
	if c := got[1].(map[string]any); c["message"] != "b" || c["lastTransitionTime"] != "2026-01-01T00:00:00Z" {
		t.Errorf("same status keeps its transition time, new message: %v", c)
	}
	got = withCondition([]any{old}, upgradeableCondition("", now))
	if c := got[0].(map[string]any); c["status"] != "True" || c["lastTransitionTime"] != "2026-12-04T22:00:00Z" {
		t.Errorf("a new status is a transition: %v", c)
	}
}
