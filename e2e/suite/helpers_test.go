package suite

import (
	"context"
	"reflect"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// The small helpers every spec file may use: a controller-runtime client, references to the OLM
// objects by name, and the one way the suite waits for a status condition (waitCondition).

// newClient is a controller-runtime client for cfg that knows the core, apiextensions and rukpak
// types. Catalogs and Operators have no Go types in this module: it reads them as unstructured
// objects (catalogNamed, operatorNamed).
func newClient(cfg *rest.Config) client.Client {
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	Expect(rukpakv1alpha1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// unstructuredNamed is an empty object of apiVersion and kind with a name, to read with a client.
func unstructuredNamed(apiVersion, kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	return u
}

func catalogNamed(name string) *unstructured.Unstructured {
	return unstructuredNamed("catalogd.operatorframework.io/v1alpha1", "Catalog", name)
}

func operatorNamed(name string) *unstructured.Unstructured {
	return unstructuredNamed("operators.operatorframework.io/v1alpha1", "Operator", name)
}

func apiServiceNamed(name string) *unstructured.Unstructured {
	return unstructuredNamed("apiregistration.k8s.io/v1", "APIService", name)
}

func bundleDeploymentNamed(name string) *rukpakv1alpha1.BundleDeployment {
	return &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// waitOption changes what waitCondition waits for, or how.
type waitOption func(*conditionWait)

type conditionWait struct {
	reason        string
	messageHas    []string
	anyGeneration bool
	poll          time.Duration
	also          []func(Gomega)
	description   []any
}

// withReason also requires the condition's reason.
func withReason(reason string) waitOption {
	return func(w *conditionWait) { w.reason = reason }
}

// withMessage also requires the condition's message to contain each of parts: a condition can pass
// through the same status with another reason and message first (Resolved=False while catalogd still
// loads a catalog it already reports Serving, say), and a wait for the status alone stops there.
func withMessage(parts ...string) waitOption {
	return func(w *conditionWait) { w.messageHas = append(w.messageHas, parts...) }
}

// anyGeneration accepts a condition that reports an older generation of the object, or none (an
// APIService's conditions carry no observedGeneration).
func anyGeneration() waitOption {
	return func(w *conditionWait) { w.anyGeneration = true }
}

// pollEvery polls every d instead of every 250 ms.
func pollEvery(d time.Duration) waitOption {
	return func(w *conditionWait) { w.poll = d }
}

// andAlso makes check part of the wait: it runs on every read (the object passed to waitCondition
// holds it) once the condition matches, and the wait goes on until it passes too.
func andAlso(check func(g Gomega)) waitOption {
	return func(w *conditionWait) { w.also = append(w.also, check) }
}

// describedAs adds a description to the failure message (a format and its arguments).
func describedAs(format string, args ...any) waitOption {
	return func(w *conditionWait) { w.description = append([]any{format}, args...) }
}

// waitCondition reads obj by its name with c, every 250 ms until timeout, until its status condition
// typ has status; by default the condition must also be for the object's current generation
// (observedGeneration = metadata.generation). obj is a typed object (bundleDeploymentNamed) or an
// unstructured one with its kind (catalogNamed, operatorNamed, apiServiceNamed); it is read into in
// place, and returned as last read.
func waitCondition[T client.Object](ctx context.Context, c client.Client, obj T, typ, status string, timeout time.Duration, opts ...waitOption) T {
	w := conditionWait{poll: 250 * time.Millisecond}
	for _, o := range opts {
		o(&w)
	}
	key := client.ObjectKeyFromObject(obj)
	what := kindOf(obj) + " " + key.Name
	if key.Namespace != "" {
		what = kindOf(obj) + " " + key.String()
	}
	EventuallyWithOffset(1, func(g Gomega) {
		reset(obj)
		g.Expect(c.Get(ctx, key, obj)).To(Succeed())
		cond := findCondition(obj, typ)
		g.Expect(cond).NotTo(BeNil(), "%s has no %s condition yet; status: %v", what, typ, objectContent(obj)["status"])
		if !w.anyGeneration {
			g.Expect(cond["observedGeneration"]).To(BeEquivalentTo(obj.GetGeneration()),
				"%s: %s is not for generation %d yet: %v", what, typ, obj.GetGeneration(), cond)
		}
		g.Expect(cond["status"]).To(Equal(status), "%s: %s: %v", what, typ, cond)
		if w.reason != "" {
			g.Expect(cond["reason"]).To(Equal(w.reason), "%s: %s: %v", what, typ, cond)
		}
		for _, part := range w.messageHas {
			g.Expect(cond["message"]).To(ContainSubstring(part), "%s: %s: %v", what, typ, cond)
		}
		for _, check := range w.also {
			check(g)
		}
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(w.poll).Should(Succeed(), w.description...)
	return obj
}

// kindOf names obj's kind: an unstructured object's, or the Go type's name.
func kindOf(obj client.Object) string {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.GetKind()
	}
	return reflect.TypeOf(obj).Elem().Name()
}

// reset empties obj before a read into it (decoding into a typed object keeps the fields the new
// content lacks), keeping the kind of an unstructured object.
func reset(obj client.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.Object = map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()}
		return
	}
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
}

// objectContent is obj as a map: an unstructured object's own, or a typed one's conversion.
func objectContent(obj client.Object) map[string]any {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	Expect(err).NotTo(HaveOccurred())
	return m
}

// findCondition returns obj's status condition typ as a map (status, reason, message,
// observedGeneration, ...), or nil.
func findCondition(obj client.Object, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(objectContent(obj), "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// conditionMessage is the message of obj's condition typ ("" when there is none).
func conditionMessage(obj client.Object, typ string) string {
	m, _ := findCondition(obj, typ)["message"].(string)
	return m
}

// nestedString returns the string at fields of obj ("" when absent).
func nestedString(obj map[string]any, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj, fields...)
	return s
}

// createNamespace creates a namespace with a generated name (prefix + a random suffix) and deletes it
// when the spec ends.
func createNamespace(ctx context.Context, prefix string) string {
	ns, err := env.clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		_ = env.clientset.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}
