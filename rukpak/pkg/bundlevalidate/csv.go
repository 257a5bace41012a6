package bundlevalidate

import (
	"fmt"
	"sort"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var knownInstallModes = []operatorsv1alpha1.InstallModeType{
	operatorsv1alpha1.InstallModeTypeAllNamespaces,
	operatorsv1alpha1.InstallModeTypeOwnNamespace,
	operatorsv1alpha1.InstallModeTypeSingleNamespace,
	operatorsv1alpha1.InstallModeTypeMultiNamespace,
}

func knownModeNames() string {
	s := make([]string, len(knownInstallModes))
	for i, m := range knownInstallModes {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// checkCSV checks the CSV's version and deployments.
func checkCSV(b *bundleFiles, r *Report) {
	csv := b.csv
	if csv.Spec.Version.String() == "0.0.0" {
		r.add(Problem{File: b.csvFile, Field: "spec.version", Message: "missing (or 0.0.0): catalogs order bundles and compute upgrade edges by it", Fix: "set spec.version to the bundle's semantic version, e.g. 1.2.3"})
	}
	if csv.Spec.InstallStrategy.StrategyName != operatorsv1alpha1.InstallStrategyNameDeployment {
		r.add(Problem{File: b.csvFile, Field: "spec.install.strategy", Message: fmt.Sprintf("%q is not supported", csv.Spec.InstallStrategy.StrategyName), Fix: "set it to deployment"})
	}
	seen := map[string]bool{}
	for i, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		f := fmt.Sprintf("spec.install.spec.deployments[%d]", i)
		if d.Name == "" {
			r.add(Problem{File: b.csvFile, Field: f + ".name", Message: "missing", Fix: "name the deployment"})
			continue
		}
		if seen[d.Name] {
			r.add(Problem{File: b.csvFile, Field: f + ".name", Message: fmt.Sprintf("deployment %q is declared twice", d.Name), Fix: "rename or remove one of them"})
		}
		seen[d.Name] = true
		sel := d.Spec.Selector
		if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
			r.add(Problem{File: b.csvFile, Field: f + ".spec.selector", Message: fmt.Sprintf("deployment %q has no selector", d.Name), Fix: "set spec.selector.matchLabels to labels of spec.template.metadata.labels"})
			continue
		}
		for k, v := range sel.MatchLabels {
			if d.Spec.Template.Labels[k] != v {
				r.add(Problem{File: b.csvFile, Field: f + ".spec.selector.matchLabels." + k, Message: fmt.Sprintf("deployment %q selects %s=%s but its pod template has no such label", d.Name, k, v), Fix: "add the label to spec.template.metadata.labels"})
			}
		}
	}
	if len(csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs) == 0 {
		// A composite (meta) package runs nothing of its own: it installs CRDs and manifests and
		// requires other packages. rukpak installs it; say so, in case a Deployment was forgotten.
		r.add(Problem{Level: LevelWarning, File: b.csvFile, Field: "spec.install.spec.deployments", Message: "empty: the bundle runs no operator of its own (a composite package installing only CRDs and manifests)", Fix: "add the operator's Deployment if it should run one"})
	}
}

// checkInstallModes: every type must be one of the four, at most once, and at least one supported.
func checkInstallModes(b *bundleFiles, r *Report) {
	csv := b.csv
	if len(csv.Spec.InstallModes) == 0 {
		r.add(Problem{File: b.csvFile, Field: "spec.installModes", Message: "missing: OLM cannot tell in which namespaces the operator may watch", Fix: "list " + knownModeNames() + " with supported: true or false"})
		return
	}
	seen := map[operatorsv1alpha1.InstallModeType]bool{}
	any := false
	for i, m := range csv.Spec.InstallModes {
		f := fmt.Sprintf("spec.installModes[%d].type", i)
		known := false
		for _, k := range knownInstallModes {
			known = known || m.Type == k
		}
		if !known {
			fix := "use one of " + knownModeNames()
			if s := closestMode(string(m.Type)); s != "" {
				fix = fmt.Sprintf("did you mean %s? (install mode types are %s)", s, knownModeNames())
			}
			r.add(Problem{File: b.csvFile, Field: f, Message: fmt.Sprintf("%q is not an install mode", m.Type), Fix: fix})
			continue
		}
		if seen[m.Type] {
			r.add(Problem{File: b.csvFile, Field: f, Message: fmt.Sprintf("install mode %s is listed twice", m.Type), Fix: "keep one entry per install mode"})
		}
		seen[m.Type] = true
		any = any || m.Supported
	}
	if !any {
		r.add(Problem{File: b.csvFile, Field: "spec.installModes", Message: "no install mode has supported: true, so the operator cannot be installed", Fix: "set supported: true on the modes the operator handles (AllNamespaces for most)"})
	}
}

// closestMode returns the known install mode closest to s (case-insensitive edit distance at most a
// third of its length, or s starting with it).
func closestMode(s string) string {
	best, bestD := "", 1<<30
	ls := strings.ToLower(s)
	for _, k := range knownInstallModes {
		lk := strings.ToLower(string(k))
		if strings.HasPrefix(ls, lk) || strings.HasPrefix(lk, ls) {
			return string(k)
		}
		if d := editDistance(ls, lk); d < bestD {
			best, bestD = string(k), d
		}
	}
	if bestD*3 <= len(best) {
		return best
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// checkOwnedCRDs: every owned CRD must be in manifests/ and serve the version and kind the CSV names.
func checkOwnedCRDs(b *bundleFiles, r *Report) {
	for i, owned := range b.csv.Spec.CustomResourceDefinitions.Owned {
		f := fmt.Sprintf("spec.customresourcedefinitions.owned[%d]", i)
		crd, ok := b.crds[owned.Name]
		if !ok {
			r.add(Problem{File: b.csvFile, Field: f + ".name", Message: fmt.Sprintf("owned CRD %q is not in %s/", owned.Name, b.manifestsDir),
				Fix: fmt.Sprintf("add the CustomResourceDefinition %q to %s/, or remove it from spec.customresourcedefinitions.owned", owned.Name, b.manifestsDir)})
			continue
		}
		kind, _, _ := unstructured.NestedString(crd.Obj.Object, "spec", "names", "kind")
		if owned.Kind != "" && kind != "" && owned.Kind != kind {
			r.add(Problem{File: b.csvFile, Field: f + ".kind", Message: fmt.Sprintf("is %q but CRD %q (%s) has kind %q", owned.Kind, owned.Name, crd.File, kind), Fix: fmt.Sprintf("set it to %s", kind)})
		}
		if owned.Version != "" {
			var versions []string
			vs, _, _ := unstructured.NestedSlice(crd.Obj.Object, "spec", "versions")
			for _, v := range vs {
				if m, ok := v.(map[string]any); ok {
					if n, ok := m["name"].(string); ok {
						versions = append(versions, n)
					}
				}
			}
			if len(versions) > 0 && !contains(versions, owned.Version) {
				sort.Strings(versions)
				r.add(Problem{File: b.csvFile, Field: f + ".version", Message: fmt.Sprintf("is %q but CRD %q (%s) serves %s", owned.Version, owned.Name, crd.File, strings.Join(versions, ", ")), Fix: "name one of the CRD's versions"})
			}
		}
	}
}

// checkRBAC compares the service accounts of the deployments with those that permissions and
// clusterPermissions grant rules to (OLM creates those accounts): a deployment that runs as an account
// that nothing creates cannot start its pods (an error); rules granted to an account no deployment
// runs as are allowed (operators use them for their operands) but are often a misspelling (a warning).
func checkRBAC(b *bundleFiles, r *Report) {
	spec := b.csv.Spec.InstallStrategy.StrategySpec
	runAs := map[string][]string{}
	var deployments []string
	for _, d := range spec.DeploymentSpecs {
		if sa := d.Spec.Template.Spec.ServiceAccountName; sa != "" && sa != "default" {
			runAs[sa] = append(runAs[sa], d.Name)
		}
		deployments = append(deployments, d.Name)
	}
	created := map[string]bool{}
	for _, o := range b.objects {
		if o.Obj.GetKind() == "ServiceAccount" && o.Obj.GetAPIVersion() == "v1" {
			created[o.Obj.GetName()] = true
		}
	}
	var granted []string
	check := func(field string, perms []operatorsv1alpha1.StrategyDeploymentPermissions) {
		for i, p := range perms {
			f := fmt.Sprintf("%s[%d].serviceAccountName", field, i)
			if p.ServiceAccountName == "" {
				r.add(Problem{File: b.csvFile, Field: f, Message: "missing", Fix: "name the service account of the deployment that needs these rules"})
				continue
			}
			created[p.ServiceAccountName] = true
			granted = append(granted, p.ServiceAccountName)
			if len(runAs[p.ServiceAccountName]) == 0 {
				r.add(Problem{Level: LevelWarning, File: b.csvFile, Field: f, Message: fmt.Sprintf("service account %q is not the account of any deployment of spec.install.spec.deployments (%s)", p.ServiceAccountName, strings.Join(deployments, ", ")),
					Fix: "if the operator itself needs these rules, set its deployment's spec.template.spec.serviceAccountName to this name"})
			}
		}
	}
	check("spec.install.spec.permissions", spec.Permissions)
	check("spec.install.spec.clusterPermissions", spec.ClusterPermissions)
	for i, d := range spec.DeploymentSpecs {
		sa := d.Spec.Template.Spec.ServiceAccountName
		if sa == "" || sa == "default" || created[sa] {
			continue
		}
		fix := "grant the deployment's rules to this account in spec.install.spec.permissions or clusterPermissions, or ship the ServiceAccount in " + b.manifestsDir + "/"
		if len(granted) > 0 {
			fix = fmt.Sprintf("the rules are granted to %s: use that name here, or grant rules to %q", strings.Join(granted, ", "), sa)
		}
		r.add(Problem{File: b.csvFile, Field: fmt.Sprintf("spec.install.spec.deployments[%d].spec.template.spec.serviceAccountName", i),
			Message: fmt.Sprintf("deployment %q runs as service account %q, which no permissions entry, clusterPermissions entry or manifest creates, so its pods cannot start", d.Name, sa),
			Fix:     fix})
	}
}

// checkWebhooks: each webhook definition names an existing deployment, a valid port and type, admission
// webhooks have sideEffects and admissionReviewVersions, conversion webhooks name owned CRDs.
func checkWebhooks(b *bundleFiles, r *Report) {
	csv := b.csv
	deployments := map[string]bool{}
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		deployments[d.Name] = true
	}
	owned := map[string]bool{}
	for _, o := range csv.Spec.CustomResourceDefinitions.Owned {
		owned[o.Name] = true
	}
	names := map[string]int{}
	for i, w := range csv.Spec.WebhookDefinitions {
		f := fmt.Sprintf("spec.webhookdefinitions[%d]", i)
		add := func(field, msg, fix string) {
			r.add(Problem{File: b.csvFile, Field: f + field, Message: msg, Fix: fix})
		}
		if w.GenerateName == "" {
			add(".generateName", "missing", "name the webhook (a DNS name such as vfoo.example.com)")
		} else if j, dup := names[w.GenerateName]; dup {
			add(".generateName", fmt.Sprintf("%q is also the name of spec.webhookdefinitions[%d]", w.GenerateName, j), "give each webhook its own generateName")
		} else {
			names[w.GenerateName] = i
		}
		if !deployments[w.DeploymentName] {
			add(".deploymentName", fmt.Sprintf("webhook %q is served by deployment %q, which is not in spec.install.spec.deployments", w.GenerateName, w.DeploymentName), "set deploymentName to the deployment that serves the webhook")
		}
		if w.ContainerPort <= 0 || w.ContainerPort > 65535 {
			add(".containerPort", fmt.Sprintf("%d is not a port", w.ContainerPort), "set the port the webhook server listens on (1-65535), e.g. 443 or 9443")
		}
		switch w.Type {
		case operatorsv1alpha1.ValidatingAdmissionWebhook, operatorsv1alpha1.MutatingAdmissionWebhook:
			if w.SideEffects == nil {
				add(".sideEffects", "missing (admissionregistration.k8s.io/v1 requires it)", "set it to None or NoneOnDryRun")
			}
			if len(w.AdmissionReviewVersions) == 0 {
				add(".admissionReviewVersions", "missing (admissionregistration.k8s.io/v1 requires it)", "set it to [v1]")
			}
			if len(w.Rules) == 0 {
				add(".rules", fmt.Sprintf("webhook %q has no rules, so the API server never calls it", w.GenerateName), "list the operations and resources it handles")
			}
			if len(w.ConversionCRDs) > 0 {
				add(".conversionCRDs", fmt.Sprintf("set on a %s", w.Type), "conversionCRDs belong to a ConversionWebhook definition")
			}
		case operatorsv1alpha1.ConversionWebhook:
			if len(w.ConversionCRDs) == 0 {
				add(".conversionCRDs", "empty: a conversion webhook converts the CRDs listed here", "list the owned CRDs it converts")
			}
			for j, c := range w.ConversionCRDs {
				if !owned[c] {
					add(fmt.Sprintf(".conversionCRDs[%d]", j), fmt.Sprintf("CRD %q is not owned by the CSV", c), "add it to spec.customresourcedefinitions.owned (and to manifests/) or remove it here")
				}
			}
		default:
			add(".type", fmt.Sprintf("%q is not a webhook type", w.Type), "use ValidatingAdmissionWebhook, MutatingAdmissionWebhook or ConversionWebhook")
		}
	}
}
