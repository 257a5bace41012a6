package health

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		name, doc, why string
		ok             bool
		exact          bool // why is the whole message, not a part of it
	}{
		{name: "deployment available", ok: true, doc: `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 2}, spec: {replicas: 2},
			status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2, conditions: [{type: Available, status: "True"}]}}`},
		{name: "deployment upgrade whose new pod is not ready: old replica left", why: "rollout in progress: 1 of 1 replicas updated, 1 old replicas pending termination", exact: true,
			doc: `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 2}, spec: {replicas: 1},
			status: {observedGeneration: 2, replicas: 2, updatedReplicas: 1, availableReplicas: 1, unavailableReplicas: 1, conditions: [{type: Available, status: "True"}]}}`},
		{name: "deployment upgrade of two replicas still rolling", why: "rollout in progress: 1 of 2 replicas updated", exact: true,
			doc: `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 3}, spec: {replicas: 2},
			status: {observedGeneration: 3, replicas: 3, updatedReplicas: 1, availableReplicas: 2, conditions: [{type: Available, status: "True"}]}}`},
		{name: "deployment updated but not all available", why: "rollout in progress: 1 of 2 updated replicas available", exact: true,
			doc: `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 1}, spec: {replicas: 2, strategy: {rollingUpdate: {maxUnavailable: 1}}},
			status: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 1, conditions: [{type: Available, status: "True"}]}}`},
		{name: "statefulset rolling out: revisions differ", why: "rollout in progress: current revision db-1, update revision db-2",
			doc: `{apiVersion: apps/v1, kind: StatefulSet, metadata: {generation: 2}, spec: {replicas: 1},
			status: {observedGeneration: 2, readyReplicas: 1, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2}}`},
		{name: "statefulset OnDelete keeps its old revision", ok: true,
			doc: `{apiVersion: apps/v1, kind: StatefulSet, metadata: {generation: 2}, spec: {replicas: 1, updateStrategy: {type: OnDelete}},
			status: {observedGeneration: 2, readyReplicas: 1, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2}}`},
		{name: "daemonset pods ready but not available", why: "rollout in progress: 1 of 2 pods available",
			doc: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {generation: 1}, status: {observedGeneration: 1, desiredNumberScheduled: 2, numberReady: 2, updatedNumberScheduled: 2, numberAvailable: 1}}`},
		{name: "daemonset misscheduled", why: "1 pods run on nodes they should not run on",
			doc: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {generation: 1}, status: {observedGeneration: 1, desiredNumberScheduled: 2, numberReady: 2, updatedNumberScheduled: 2, numberAvailable: 2, numberMisscheduled: 1}}`},
		{name: "deployment not available", why: "not Available: Deployment does not have minimum availability", doc: `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 1},
			status: {observedGeneration: 1, conditions: [{type: Available, status: "False", message: Deployment does not have minimum availability}]}}`},
		{name: "deployment generation not observed", why: "has not observed generation 3", doc: `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 3},
			status: {observedGeneration: 2, conditions: [{type: Available, status: "True"}]}}`},
		{name: "deployment rolling out", why: "1 of 2 replicas updated", doc: `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 1}, spec: {replicas: 2},
			status: {observedGeneration: 1, updatedReplicas: 1, conditions: [{type: Available, status: "True"}]}}`},
		{name: "deployment without pods: ReplicaFailure", doc: `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 1}, spec: {replicas: 1},
			status: {observedGeneration: 1, conditions: [
			  {type: Available, status: "False", reason: MinimumReplicasUnavailable, message: Deployment does not have minimum availability.},
			  {type: ReplicaFailure, status: "True", reason: FailedCreate, message: 'pods "op-7d9c8-" is forbidden: no PriorityClass with name critical-ops was found'},
			  {type: Progressing, status: "True", reason: ReplicaSetUpdated, message: ReplicaSet "op-7d9c8" is progressing.}]}}`,
			why: `not Available: Deployment does not have minimum availability.; ReplicaFailure (FailedCreate): pods "op-7d9c8-" is forbidden: no PriorityClass with name critical-ops was found`, exact: true},
		{name: "deployment past its progress deadline", doc: `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 1}, spec: {replicas: 1},
			status: {observedGeneration: 1, conditions: [
			  {type: Available, status: "False", reason: MinimumReplicasUnavailable, message: Deployment does not have minimum availability.},
			  {type: Progressing, status: "False", reason: ProgressDeadlineExceeded, message: ReplicaSet "op-7d9c8" has timed out progressing.}]}}`,
			why: `not Available: Deployment does not have minimum availability.; Progressing=False (ProgressDeadlineExceeded): ReplicaSet "op-7d9c8" has timed out progressing.`},
		{name: "deployment with both failures", doc: `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 1},
			status: {observedGeneration: 1, conditions: [
			  {type: Available, status: "False", message: Deployment does not have minimum availability.},
			  {type: ReplicaFailure, status: "True", reason: FailedCreate, message: 'pods "op-1" is forbidden: exceeded quota: pods'},
			  {type: Progressing, status: "False", reason: ProgressDeadlineExceeded, message: ReplicaSet "op-1" has timed out progressing.}]}}`,
			why: `minimum availability.; ReplicaFailure (FailedCreate): pods "op-1" is forbidden: exceeded quota: pods; Progressing=False (ProgressDeadlineExceeded): ReplicaSet "op-1" has timed out progressing.`},
		{name: "stuck rollout of an available deployment", doc: `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 2}, spec: {replicas: 2},
			status: {observedGeneration: 2, updatedReplicas: 1, conditions: [
			  {type: Available, status: "True"},
			  {type: Progressing, status: "False", reason: ProgressDeadlineExceeded, message: ReplicaSet "op-2" has timed out progressing.}]}}`,
			why: `rollout in progress: 1 of 2 replicas updated; Progressing=False (ProgressDeadlineExceeded): ReplicaSet "op-2" has timed out progressing.`},
		{name: "resolved ReplicaFailure and other Progressing=False reasons are left out", doc: `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 1},
			status: {observedGeneration: 1, conditions: [
			  {type: Available, status: "False", message: Deployment does not have minimum availability.},
			  {type: ReplicaFailure, status: "False", reason: FailedCreate, message: old},
			  {type: Progressing, status: "False", reason: SomethingElse, message: other}]}}`,
			why: `not Available: Deployment does not have minimum availability.`, exact: true},
		{name: "ReplicaFailure without message", doc: `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 1},
			status: {observedGeneration: 1, conditions: [{type: ReplicaFailure, status: "True", reason: FailedCreate}]}}`,
			why: `not Available: condition Available is not True; ReplicaFailure (FailedCreate)`, exact: true},
		{name: "statefulset with ReplicaFailure", doc: `{apiVersion: apps/v1, kind: StatefulSet, metadata: {generation: 1}, spec: {replicas: 1},
			status: {observedGeneration: 1, conditions: [{type: ReplicaFailure, status: "True", reason: FailedCreate, message: 'pods "db-0" is forbidden: no PriorityClass with name y was found'}]}}`,
			why: `0 of 1 replicas ready, 0 updated; ReplicaFailure (FailedCreate): pods "db-0" is forbidden: no PriorityClass with name y was found`},
		{name: "daemonset with ReplicaFailure", doc: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {generation: 1},
			status: {observedGeneration: 1, desiredNumberScheduled: 2, conditions: [{type: ReplicaFailure, status: "True", reason: FailedCreate, message: quota}]}}`,
			why: `0 of 2 pods ready, 0 updated; ReplicaFailure (FailedCreate): quota`, exact: true},
		{name: "statefulset ready", ok: true, doc: `{apiVersion: apps/v1, kind: StatefulSet, metadata: {generation: 1}, spec: {replicas: 1}, status: {observedGeneration: 1, readyReplicas: 1, updatedReplicas: 1}}`},
		{name: "statefulset not ready", why: "0 of 3 replicas ready", doc: `{apiVersion: apps/v1, kind: StatefulSet, metadata: {generation: 1}, spec: {replicas: 3}, status: {observedGeneration: 1}}`},
		{name: "daemonset ready", ok: true, doc: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {generation: 1}, status: {observedGeneration: 1, desiredNumberScheduled: 2, numberReady: 2, updatedNumberScheduled: 2}}`},
		{name: "daemonset not ready", why: "1 of 2 pods ready", doc: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {generation: 1}, status: {observedGeneration: 1, desiredNumberScheduled: 2, numberReady: 1, updatedNumberScheduled: 2}}`},
		{name: "crd established", ok: true, doc: `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, status: {conditions: [{type: Established, status: "True"}]}}`},
		{name: "crd not established", why: "not Established", doc: `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, status: {conditions: [{type: NamesAccepted, status: "False", message: clash}]}}`},
		{name: "job complete", ok: true, doc: `{apiVersion: batch/v1, kind: Job, metadata: {generation: 1}, status: {succeeded: 1, conditions: [{type: SuccessCriteriaMet, status: "True"}, {type: Complete, status: "True"}]}}`},
		{name: "job running", why: "not complete yet: 1 active, 0 succeeded, 0 failed pods", doc: `{apiVersion: batch/v1, kind: Job, metadata: {generation: 1}, status: {active: 1}}`},
		{name: "job failed", why: "failed (BackoffLimitExceeded): Job has reached the specified backoff limit", doc: `{apiVersion: batch/v1, kind: Job, metadata: {generation: 1},
			status: {failed: 7, conditions: [{type: FailureTarget, status: "True"}, {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}]}}`},
		{name: "job without status", why: "not complete yet", doc: `{apiVersion: batch/v1, kind: Job, metadata: {generation: 1}}`},
		{name: "pvc bound", ok: true, doc: `{apiVersion: v1, kind: PersistentVolumeClaim, status: {phase: Bound}}`},
		{name: "pvc pending", why: "phase Pending, not Bound", doc: `{apiVersion: v1, kind: PersistentVolumeClaim, status: {phase: Pending}}`},
		{name: "pvc without status", why: "phase Pending, not Bound", doc: `{apiVersion: v1, kind: PersistentVolumeClaim}`},
		{name: "pvc lost", why: "phase Lost", doc: `{apiVersion: v1, kind: PersistentVolumeClaim, status: {phase: Lost}}`},
		{name: "apiservice available", ok: true, doc: `{apiVersion: apiregistration.k8s.io/v1, kind: APIService, status: {conditions: [{type: Available, status: "True"}]}}`},
		{name: "apiservice unavailable", why: "not Available: failing or missing response from https://127.0.0.1:1/apis/x/v1", doc: `{apiVersion: apiregistration.k8s.io/v1, kind: APIService,
			status: {conditions: [{type: Available, status: "False", reason: FailedDiscoveryCheck, message: "failing or missing response from https://127.0.0.1:1/apis/x/v1"}]}}`},
		{name: "apiservice without status", why: "not Available: condition Available is not True", doc: `{apiVersion: apiregistration.k8s.io/v1, kind: APIService}`},
		{name: "configmap", ok: true, doc: `{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := Evaluate(obj(t, tc.doc))
			if ok != tc.ok || !strings.Contains(why, tc.why) || (!ok && tc.why == "") || (tc.exact && why != tc.why) {
				t.Errorf("Evaluate = %v %q, want %v containing %q", ok, why, tc.ok, tc.why)
			}
		})
	}
}

func TestWebhookServices(t *testing.T) {
	objs := []*unstructured.Unstructured{
		obj(t, `{apiVersion: admissionregistration.k8s.io/v1, kind: MutatingWebhookConfiguration, metadata: {name: m},
			webhooks: [{name: a, clientConfig: {service: {namespace: ns, name: svc}}}, {name: b, clientConfig: {service: {namespace: ns, name: svc}}},
			{name: c, clientConfig: {url: "https://example.com"}}]}`),
		obj(t, `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: w.example.com},
			spec: {conversion: {strategy: Webhook, webhook: {clientConfig: {service: {namespace: ns, name: conv}}}}}}`),
		obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}`),
	}
	got := WebhookServices(objs)
	if len(got) != 2 || got[0].Name != "svc" || got[0].Caller != "MutatingWebhookConfiguration m" || got[1].Name != "conv" {
		t.Errorf("WebhookServices = %+v", got)
	}
}
