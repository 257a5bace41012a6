// Command v0install writes into a cluster what OLM v0 leaves there after installing a registry+v1
// bundle directory, for tests that cannot import operator-controller's internal packages (the
// real-node e2e spec of `kubectl olmv1 migrate`, e2e/realnode/suite/migrate_test.go). OLM v0 itself
// cannot be built or run here (docs/migration.md).
//
// It installs OLM v0's CRDs (v0fixture.InstallCRDs), creates the Subscription's and the
// CatalogSource's namespaces when they are missing (the cluster admin's part), runs
// v0fixture.Install (CatalogSource, OperatorGroup, Subscription, CSV, CRDs, ServiceAccounts, RBAC,
// Deployments and, for webhooks, OLM v0's Service, serving Secret and webhook configurations), then
// points every CRD of a conversion webhook definition at OLM v0's webhook Service with OLM v0's CA,
// as OLM v0's installer does (v0fixture does not write conversion webhooks), and prints what it
// wrote.
//
//	go run ./test/tools/v0install --kubeconfig KUBECONFIG --bundle-dir DIR --package PKG \
//	  --namespace NS --channel stable --catalog-image REF --catalog-source NAME --catalog-namespace NS \
//	  --subscription NAME --operator-group NAME [--target-namespaces a,b]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/migrate"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/migrate/v0fixture"
)

// olmManager is the field manager of OLM v0's CSV controller, which writes the conversion webhooks.
const olmManager = "olm"

// OLM v0's names for a webhook Deployment's Service and serving Secret, and the Secret's CA key.
const (
	serviceSuffix = "-service"
	secretSuffix  = "-cert"
	secretKeyCA   = "olmCAKey"
	defaultPort   = int32(443)
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "v0install:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("v0install", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (default $KUBECONFIG)")
	targets := fs.String("target-namespaces", "", "the OperatorGroup's target namespaces, comma-separated (empty: AllNamespaces)")
	approval := fs.String("approval", string(v0.ApprovalAutomatic), "the Subscription's installPlanApproval: Automatic or Manual")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long the whole install may take")
	var o v0fixture.Options
	fs.StringVar(&o.Dir, "bundle-dir", "", "registry+v1 bundle directory (manifests/ and metadata/) (required)")
	fs.StringVar(&o.Package, "package", "", "package name (required)")
	fs.StringVar(&o.Namespace, "namespace", "", "namespace of the Subscription, OperatorGroup, CSV and operator (required)")
	fs.StringVar(&o.Channel, "channel", "stable", "the Subscription's channel")
	fs.StringVar(&o.CatalogImage, "catalog-image", "", "the CatalogSource's image: a file-based catalog image listing the package (required)")
	fs.StringVar(&o.CatalogSource, "catalog-source", "", "the CatalogSource's name (default: <package>-catalog)")
	fs.StringVar(&o.CatalogNamespace, "catalog-namespace", "", "the CatalogSource's namespace (default: --namespace)")
	fs.StringVar(&o.Subscription, "subscription", "", "the Subscription's name (default: the package)")
	fs.StringVar(&o.OperatorGroup, "operator-group", "", "the OperatorGroup's name (default: <namespace>-operatorgroup)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := complete(&o, *targets, *approval); err != nil {
		return err
	}
	if *kubeconfig == "" {
		return errors.New("no kubeconfig: pass --kubeconfig or set $KUBECONFIG")
	}
	c, err := newClient(*kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	return install(ctx, c, o, out)
}

// complete checks the required flags and fills in the defaults.
func complete(o *v0fixture.Options, targets, approval string) error {
	var missing []string
	for _, f := range []struct{ name, value string }{
		{"--bundle-dir", o.Dir}, {"--package", o.Package}, {"--namespace", o.Namespace}, {"--catalog-image", o.CatalogImage},
	} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s (see --help)", strings.Join(missing, ", "))
	}
	if o.CatalogSource == "" {
		o.CatalogSource = o.Package + "-catalog"
	}
	if o.CatalogNamespace == "" {
		o.CatalogNamespace = o.Namespace
	}
	if o.Subscription == "" {
		o.Subscription = o.Package
	}
	if o.OperatorGroup == "" {
		o.OperatorGroup = o.Namespace + "-operatorgroup"
	}
	for _, t := range strings.Split(targets, ",") {
		if t = strings.TrimSpace(t); t != "" {
			o.Targets = append(o.Targets, t)
		}
	}
	switch a := v0.Approval(approval); a {
	case v0.ApprovalAutomatic, v0.ApprovalManual:
		o.Approval = a
	default:
		return fmt.Errorf("--approval %q: want Automatic or Manual", approval)
	}
	return nil
}

func newClient(kubeconfig string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// install writes OLM v0's state for o and prints it.
func install(ctx context.Context, c client.Client, o v0fixture.Options, out io.Writer) error {
	if err := v0fixture.InstallCRDs(ctx, c); err != nil {
		return fmt.Errorf("installing OLM v0's CRDs: %w", err)
	}
	fmt.Fprintln(out, "OLM v0's CRDs established (operators.coreos.com: CatalogSource, ClusterServiceVersion, InstallPlan, OperatorGroup, Subscription, OperatorCondition, Operator)")
	for _, ns := range uniq(append([]string{o.Namespace, o.CatalogNamespace}, o.Targets...)) {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		switch {
		case err == nil:
			fmt.Fprintf(out, "Namespace %s created\n", ns)
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	inst, err := v0fixture.Install(ctx, c, o)
	if err != nil {
		return err
	}
	csv := inst.CSV
	targets := "all namespaces"
	if len(o.Targets) > 0 {
		targets = strings.Join(o.Targets, ",")
	}
	fmt.Fprintf(out, "CatalogSource %s/%s: image %s\n", o.CatalogNamespace, o.CatalogSource, o.CatalogImage)
	fmt.Fprintf(out, "OperatorGroup %s/%s: target namespaces %s\n", o.Namespace, o.OperatorGroup, targets)
	fmt.Fprintf(out, "Subscription %s/%s: package %s, channel %s, installPlanApproval %s, installedCSV %s\n",
		o.Namespace, o.Subscription, o.Package, o.Channel, o.Approval, csv.Name)
	fmt.Fprintf(out, "ClusterServiceVersion %s/%s: version %s, phase %s\n", o.Namespace, csv.Name, csv.Spec.Version.String(), csv.Status.Phase)
	for _, d := range inst.Deployments {
		fmt.Fprintf(out, "Deployment %s/%s: %d volume(s), pod template annotations %s\n", d.Namespace, d.Name,
			len(d.Spec.Template.Spec.Volumes), strings.Join(sortedKeys(d.Spec.Template.Annotations), ","))
	}
	for _, crd := range csv.Spec.CustomResourceDefinitions.Owned {
		fmt.Fprintf(out, "CustomResourceDefinition %s: owned (%s %s)\n", crd.Name, crd.Kind, crd.Version)
	}
	if err := printWebhooks(ctx, c, csv, out); err != nil {
		return err
	}
	return installConversionWebhooks(ctx, c, csv, out)
}

// printWebhooks prints OLM v0's webhook Services, serving Secrets and webhook configurations of csv.
func printWebhooks(ctx context.Context, c client.Client, csv *v0.ClusterServiceVersion, out io.Writer) error {
	seen := map[string]bool{}
	for _, w := range csv.Spec.WebhookDefinitions {
		if seen[w.DeploymentName] {
			continue
		}
		seen[w.DeploymentName] = true
		svc := w.DeploymentName + serviceSuffix
		fmt.Fprintf(out, "Service %s/%s and Secret %s/%s%s (signed by OLM v0's CA)\n", csv.Namespace, svc, csv.Namespace, svc, secretSuffix)
	}
	sel := client.MatchingLabels{migrate.LabelOwner: csv.Name, migrate.LabelOwnerNamespace: csv.Namespace}
	vwcs := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := c.List(ctx, vwcs, sel); err != nil {
		return err
	}
	for _, w := range vwcs.Items {
		fmt.Fprintf(out, "ValidatingWebhookConfiguration %s\n", w.Name)
	}
	mwcs := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	if err := c.List(ctx, mwcs, sel); err != nil {
		return err
	}
	for _, w := range mwcs.Items {
		fmt.Fprintf(out, "MutatingWebhookConfiguration %s\n", w.Name)
	}
	return nil
}

// installConversionWebhooks sets, on every CRD named by a conversion webhook definition of csv, the
// conversion OLM v0's installer writes: strategy Webhook, the Deployment's webhook Service
// (<deployment>-service in the CSV's namespace) at the definition's path and container port, the CA
// of that Deployment's serving Secret (its olmCAKey) as caBundle, and the definition's review
// versions.
func installConversionWebhooks(ctx context.Context, c client.Client, csv *v0.ClusterServiceVersion, out io.Writer) error {
	for _, w := range csv.Spec.WebhookDefinitions {
		if w.Type != v0.ConversionWebhook {
			continue
		}
		svc := w.DeploymentName + serviceSuffix
		secret := &corev1.Secret{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: csv.Namespace, Name: svc + secretSuffix}, secret); err != nil {
			return fmt.Errorf("reading OLM v0's serving Secret of Deployment %s: %w", w.DeploymentName, err)
		}
		ca := secret.Data[secretKeyCA]
		if len(ca) == 0 {
			return fmt.Errorf("Secret %s/%s has no %s: cannot set the conversion webhook's caBundle", csv.Namespace, secret.Name, secretKeyCA)
		}
		port := defaultPort
		if w.ContainerPort > 0 {
			port = w.ContainerPort
		}
		path := "/"
		if w.WebhookPath != nil {
			path = *w.WebhookPath
		}
		conversion := map[string]any{
			"strategy": "Webhook",
			"webhook": map[string]any{
				"conversionReviewVersions": w.AdmissionReviewVersions,
				"clientConfig": map[string]any{
					"caBundle": ca,
					"service":  map[string]any{"namespace": csv.Namespace, "name": svc, "path": path, "port": port},
				},
			},
		}
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": conversion}})
		if err != nil {
			return err
		}
		for _, name := range w.ConversionCRDs {
			crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := c.Patch(ctx, crd, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(olmManager)); err != nil {
				return fmt.Errorf("setting the conversion webhook of CRD %s: %w", name, err)
			}
			fmt.Fprintf(out, "CustomResourceDefinition %s: conversion webhook %s → Service %s/%s:%d%s (OLM v0's CA)\n",
				name, w.GenerateName, csv.Namespace, svc, port, path)
		}
	}
	return nil
}

func uniq(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
