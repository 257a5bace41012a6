package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The operator says "do not upgrade me now" the way operators written for OLM v0 do with
// operator-lib's conditions package: it writes the Upgradeable condition into spec.conditions of its
// OperatorCondition (operators.coreos.com/v2), the object OPERATOR_CONDITION_NAME names in the
// operator's own namespace, when ReportUpgradeableEnv is "true" (off by default, so that the other
// specs' installs of the operator never touch their OperatorCondition). With HoldUpgradesEnv set to a
// message the condition is False with that message, else True.
const (
	// ReportUpgradeableEnv set to "true" turns the reporting on.
	ReportUpgradeableEnv = "WIDGET_REPORT_UPGRADEABLE"
	// HoldUpgradesEnv holds upgrades with its value as the message.
	HoldUpgradesEnv = "WIDGET_HOLD_UPGRADES"
	// OperatorConditionNameEnv names the OperatorCondition (OLM sets it).
	OperatorConditionNameEnv = "OPERATOR_CONDITION_NAME"
	// HoldReason is the reason of Upgradeable=False.
	HoldReason = "Migrating"
	// namespaceFile is where the pod's namespace is mounted with its ServiceAccount token.
	namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
)

var operatorConditionGVK = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v2", Kind: "OperatorCondition"}

// upgradeableCondition is the Upgradeable condition the operator reports, from HoldUpgradesEnv.
func upgradeableCondition(hold string, now time.Time) map[string]any {
	c := map[string]any{"type": "Upgradeable", "status": "True", "reason": "Ready",
		"message": "widget-operator can be upgraded", "lastTransitionTime": now.UTC().Format(time.RFC3339)}
	if hold != "" {
		c["status"], c["reason"], c["message"] = "False", HoldReason, hold
	}
	return c
}

// withCondition returns conds with c in place of the entry of c's type (appended when there is none).
// An entry whose status did not change keeps its lastTransitionTime.
func withCondition(conds []any, c map[string]any) []any {
	out := make([]any, 0, len(conds)+1)
	replaced := false
	for _, x := range conds {
		if m, ok := x.(map[string]any); ok && m["type"] == c["type"] {
			if m["status"] == c["status"] {
				c["lastTransitionTime"] = m["lastTransitionTime"]
			}
			out, replaced = append(out, c), true
			continue
		}
		out = append(out, x)
	}
	if !replaced {
		out = append(out, c)
	}
	return out
}

// upgradeableReporter writes the Upgradeable condition once the operator runs, retrying every 2 s
// until its OperatorCondition exists and accepts the write (OLM creates it around the install). It
// reads with reader (uncached: the operator may get only its own OperatorCondition, not list them)
// and is nil when reporting is off or OLM did not name an OperatorCondition.
func upgradeableReporter(reader client.Reader, writer client.Writer, log logr.Logger) manager.RunnableFunc {
	if os.Getenv(ReportUpgradeableEnv) != "true" {
		return nil
	}
	name := os.Getenv(OperatorConditionNameEnv)
	if name == "" {
		log.Info("no OperatorCondition to report Upgradeable to", "env", OperatorConditionNameEnv)
		return nil
	}
	return func(ctx context.Context) error {
		ns, err := os.ReadFile(namespaceFile)
		if err != nil {
			return fmt.Errorf("reading the operator's namespace for its OperatorCondition %s: %w", name, err)
		}
		key := types.NamespacedName{Namespace: strings.TrimSpace(string(ns)), Name: name}
		cond := upgradeableCondition(os.Getenv(HoldUpgradesEnv), time.Now())
		_ = wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
			oc := &unstructured.Unstructured{}
			oc.SetGroupVersionKind(operatorConditionGVK)
			if err := reader.Get(ctx, key, oc); err != nil {
				log.Info("cannot read the OperatorCondition yet", "operatorCondition", key, "err", err.Error())
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(oc.Object, "spec", "conditions")
			if err := unstructured.SetNestedSlice(oc.Object, withCondition(conds, cond), "spec", "conditions"); err != nil {
				return false, err
			}
			if err := writer.Update(ctx, oc); err != nil {
				log.Info("cannot update the OperatorCondition yet", "operatorCondition", key, "err", err.Error())
				return false, nil
			}
			log.Info("Upgradeable reported", "operatorCondition", key, "status", cond["status"], "message", cond["message"])
			return true, nil
		})
		return nil
	}
}
