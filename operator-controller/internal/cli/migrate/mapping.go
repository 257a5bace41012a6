package migrate

import (
	"fmt"
	"sort"
	"strings"

	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Annotations migrate writes on the objects it creates, from which a resumed run knows where it is.
const (
	// AnnotationMigratedFrom (on the Operator and the Catalog) is "<namespace>/<subscription>/<csv>":
	// the OLM v0 installation the Operator replaces.
	AnnotationMigratedFrom = "operators.operatorframework.io/migrated-from"
	// AnnotationMigrationPhase (on the Operator) is the last phase migrate finished: Adopting,
	// Releasing or Complete.
	AnnotationMigrationPhase = "operators.operatorframework.io/migration-phase"
	// AnnotationMigratingTo (on the Subscription) names the Operator that replaces it.
	AnnotationMigratingTo = "operators.operatorframework.io/migrating-to"
)

// Phases recorded in AnnotationMigrationPhase.
const (
	PhaseAdopting  = "Adopting"
	PhaseReleasing = "Releasing"
	PhaseComplete  = "Complete"
)

// Target is what OLM v1 objects an OLM v0 installation maps to.
type Target struct {
	Catalog  *catalogdv1alpha1.Catalog
	Operator *operatorsv1alpha1.Operator
	// Notes are what a person should know about the mapping (what is not carried over, and why).
	Notes []string
}

// Map turns one operator as OLM v0 installed it into the Catalog and Operator that replace it, and
// lists what blocks the move. It is pure: st is everything it reads.
func Map(st *V0) (*Target, []string) {
	var blockers []string
	sub, csv := st.Subscription, st.CSV
	if sub == nil {
		return nil, []string{fmt.Sprintf("Subscription not found in namespace %s", st.Namespace)}
	}
	where := fmt.Sprintf("Subscription %s/%s", sub.Namespace, sub.Name)
	if sub.Status.InstalledCSV == "" {
		return nil, []string{where + ": nothing is installed (status.installedCSV is empty): wait for OLM v0 to install it, or install the package with `kubectl olmv1 install` instead"}
	}
	if csv == nil {
		return nil, []string{fmt.Sprintf("%s: its installed CSV %s does not exist: fix the OLM v0 installation first", where, sub.Status.InstalledCSV)}
	}
	if csv.Status.Phase != v0.CSVPhaseSucceeded {
		blockers = append(blockers, fmt.Sprintf("CSV %s/%s is in phase %s (%s: %s), not Succeeded: only a working installation can be adopted; fix it with OLM v0 first",
			csv.Namespace, csv.Name, csv.Status.Phase, csv.Status.Reason, csv.Status.Message))
	}
	if csv.Labels[LabelCopiedFrom] != "" {
		blockers = append(blockers, fmt.Sprintf("CSV %s/%s is a copy (olm.copiedFrom=%s): migrate the Subscription in namespace %s", csv.Namespace, csv.Name, csv.Labels[LabelCopiedFrom], csv.Labels[LabelCopiedFrom]))
	}
	blockers = append(blockers, dependencyBlockers(st)...)
	blockers = append(blockers, unsupportedBlockers(csv)...)

	watch, og, ogBlockers := watchNamespaces(st)
	blockers = append(blockers, ogBlockers...)

	cat, catBlockers := mapCatalog(st)
	blockers = append(blockers, catBlockers...)

	t := &Target{Catalog: cat}
	op := &operatorsv1alpha1.Operator{
		TypeMeta: metav1.TypeMeta{APIVersion: operatorsv1alpha1.GroupVersion.String(), Kind: "Operator"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        OperatorName(sub),
			Annotations: map[string]string{AnnotationMigratedFrom: MigratedFrom(sub.Namespace, sub.Name, csv.Name)},
		},
		Spec: operatorsv1alpha1.OperatorSpec{
			PackageName:      sub.Spec.Package,
			Channel:          sub.Spec.Channel,
			Version:          csv.Spec.Version.String(),
			InstallNamespace: sub.Namespace,
			WatchNamespaces:  watch,
			// Adopt what OLM v0 created: its ownerReferences to the CSV are not controller references.
			CollisionPolicy: rukpakv1alpha1.CollisionPolicyIfNoController,
			// Until OLM v0 has let go, deleting the Operator (the rollback) must leave every object.
			DeletionPolicy: rukpakv1alpha1.DeletionPolicyOrphan,
			UpgradePolicy:  operatorsv1alpha1.UpgradePolicyAutomatic,
		},
	}
	if sub.Spec.InstallPlanApproval == v0.ApprovalManual {
		op.Spec.UpgradePolicy = operatorsv1alpha1.UpgradePolicyManual
	}
	if cat != nil {
		op.Spec.CatalogSelector = &metav1.LabelSelector{MatchLabels: map[string]string{catalogdv1alpha1.LabelMetadataName: cat.Name}}
	}
	op.Spec.Config = &rukpakv1alpha1.BundleConfig{DeploymentConfig: deploymentConfig(sub.Spec.Config, csv.Name, og)}
	if len(csv.Spec.WebhookDefinitions) > 0 {
		// OLM v0's rendering of webhook Deployments, so that their pod templates stay.
		op.Spec.Config.OLMv0 = &rukpakv1alpha1.OLMv0Rendering{CAHash: liveCAHash(st), CABundle: liveCABundle(st)}
	}
	t.Operator = op
	t.Notes = append(t.Notes, webhookNotes(csv)...)
	t.Notes = append(t.Notes, fmt.Sprintf("version pinned to %s (the installed CSV's version) so that nothing upgrades during the move: widen spec.version afterwards to let it upgrade", op.Spec.Version))
	t.Notes = append(t.Notes, fmt.Sprintf("OperatorGroup and CatalogSource %s/%s stay: other Subscriptions may use them; delete them when none does", sub.Spec.CatalogSourceNamespace, sub.Spec.CatalogSource))
	if sub.Spec.StartingCSV != "" {
		t.Notes = append(t.Notes, fmt.Sprintf("startingCSV %s is not carried over: it only mattered for the first install", sub.Spec.StartingCSV))
	}
	if c := sub.Spec.Config; c != nil && c.Selector != nil {
		t.Notes = append(t.Notes, "Subscription spec.config.selector is not carried over: OLM v0 ignores it too")
	}
	if len(st.CopiedCSVs) > 0 {
		var ns []string
		for _, c := range st.CopiedCSVs {
			ns = append(ns, c.Namespace)
		}
		t.Notes = append(t.Notes, fmt.Sprintf("copied CSVs in %s are ignored: OLM v0 writes them for its UI only; they are deleted with the CSV (OLM v1 has none)", strings.Join(ns, ", ")))
	}
	return t, blockers
}

// OperatorName is the name of the Operator replacing sub: its package.
func OperatorName(sub *v0.Subscription) string { return sub.Spec.Package }

// MigratedFrom is the value of AnnotationMigratedFrom.
func MigratedFrom(ns, sub, csv string) string { return ns + "/" + sub + "/" + csv }

// ParseMigratedFrom splits AnnotationMigratedFrom's value.
func ParseMigratedFrom(v string) (ns, sub, csv string, ok bool) {
	p := strings.Split(v, "/")
	if len(p) != 3 {
		return "", "", "", false
	}
	return p[0], p[1], p[2], true
}

// watchNamespaces maps the namespace's OperatorGroup to Operator.spec.watchNamespaces (nil: all
// namespaces), and returns the OperatorGroup's name.
func watchNamespaces(st *V0) ([]string, string, []string) {
	switch len(st.OperatorGroups) {
	case 0:
		return nil, "", []string{fmt.Sprintf("namespace %s has no OperatorGroup: OLM v0 cannot have installed this operator; fix the namespace first", st.Namespace)}
	case 1:
	default:
		var names []string
		for _, og := range st.OperatorGroups {
			names = append(names, og.Name)
		}
		return nil, "", []string{fmt.Sprintf("namespace %s has %d OperatorGroups (%s): OLM v0 installs nothing there; delete all but one first", st.Namespace, len(names), strings.Join(names, ", "))}
	}
	og := st.OperatorGroups[0]
	var others []string
	for _, s := range st.Subscriptions {
		if s.Name != st.Subscription.Name {
			others = append(others, s.Name)
		}
	}
	var blockers []string
	if len(others) > 0 {
		sort.Strings(others)
		blockers = append(blockers, fmt.Sprintf("OperatorGroup %s/%s is shared by Subscription %s and %s: OLM v0 resolves the operators of one OperatorGroup together (shared APIs, dependencies), "+
			"OLM v1 installs each on its own, so migrate moves only an operator that is alone in its namespace. Move the others to namespaces of their own with OLM v0 first (or uninstall them), then run migrate again",
			og.Namespace, og.Name, st.Subscription.Name, strings.Join(others, ", ")))
	}
	targets := og.Status.Namespaces
	if len(targets) == 0 {
		targets = og.Spec.TargetNamespaces
		if len(targets) == 0 && og.Spec.Selector == nil {
			targets = []string{""}
		}
	}
	if len(targets) == 0 || (len(targets) == 1 && targets[0] == "") {
		return nil, og.Name, blockers
	}
	out := append([]string(nil), targets...)
	sort.Strings(out)
	return out, og.Name, blockers
}

// mapCatalog maps the CatalogSource to a Catalog of the same name on the same image.
func mapCatalog(st *V0) (*catalogdv1alpha1.Catalog, []string) {
	sub, cs := st.Subscription, st.CatalogSource
	if cs == nil {
		return nil, []string{fmt.Sprintf("CatalogSource %s/%s of Subscription %s does not exist: create a Catalog with the catalog's image and run migrate again", sub.Spec.CatalogSourceNamespace, sub.Spec.CatalogSource, sub.Name)}
	}
	where := fmt.Sprintf("CatalogSource %s/%s", cs.Namespace, cs.Name)
	switch {
	case cs.Spec.SourceType == v0.SourceTypeConfigmap || cs.Spec.SourceType == v0.SourceTypeInternal || cs.Spec.ConfigMap != "":
		return nil, []string{fmt.Sprintf("%s is served from ConfigMap %s (sourceType %s): OLM v1 Catalogs hold file-based catalogs; convert it (`opm migrate`), push it as an image (`kubectl olmv1 catalog push`) and point the CatalogSource at that image, or create the Catalog yourself (`kubectl olmv1 catalog add`)",
			where, cs.Spec.ConfigMap, cs.Spec.SourceType)}
	case cs.Spec.Image == "":
		return nil, []string{fmt.Sprintf("%s has no image (served from address %q): OLM v1 pulls catalogs as images; push the catalog as an image and set spec.image, or create the Catalog yourself (`kubectl olmv1 catalog add`)", where, cs.Spec.Address)}
	}
	img := &rukpakv1alpha1.ImageSource{Ref: cs.Spec.Image}
	if u := cs.Spec.UpdateStrategy; u != nil && u.RegistryPoll != nil && u.RegistryPoll.Interval != nil && !strings.Contains(cs.Spec.Image, "@") {
		img.PollInterval = u.RegistryPoll.Interval
	}
	cat := &catalogdv1alpha1.Catalog{
		TypeMeta: metav1.TypeMeta{APIVersion: catalogdv1alpha1.GroupVersion.String(), Kind: "Catalog"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        cs.Name,
			Labels:      map[string]string{catalogdv1alpha1.LabelMetadataName: cs.Name},
			Annotations: map[string]string{AnnotationMigratedFrom: cs.Namespace + "/" + cs.Name},
		},
		Spec: catalogdv1alpha1.CatalogSpec{
			Source:   rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: img},
			Priority: int32(cs.Spec.Priority),
		},
	}
	var blockers []string
	if len(cs.Spec.Secrets) > 0 {
		blockers = append(blockers, fmt.Sprintf("%s pulls with secrets %s: copy the pull secret into catalogd's namespace, create the Catalog %s with spec.source.image.pullSecret yourself, and run migrate again", where, strings.Join(cs.Spec.Secrets, ", "), cs.Name))
	}
	return cat, blockers
}

// deploymentConfig maps Subscription.spec.config to deploymentConfig, and adds what OLM v0 puts on
// the pod template that OLM v1's registry+v1 renderer does not: the OperatorGroup annotation and the
// OPERATOR_CONDITION_NAME variable. With them OLM v1 renders the pod template OLM v0 runs, so the
// Deployment is adopted without a new ReplicaSet.
func deploymentConfig(c *v0.SubscriptionConfig, csvName, og string) *rukpakv1alpha1.DeploymentConfig {
	dc := &rukpakv1alpha1.DeploymentConfig{}
	if c != nil {
		dc.Env = append(dc.Env, c.Env...)
		dc.EnvFrom = c.EnvFrom
		dc.Resources = c.Resources
		dc.NodeSelector = c.NodeSelector
		dc.Tolerations = c.Tolerations
		dc.Affinity = c.Affinity
		dc.Volumes = c.Volumes
		dc.VolumeMounts = c.VolumeMounts
		for k, v := range c.Annotations {
			if dc.Annotations == nil {
				dc.Annotations = map[string]string{}
			}
			dc.Annotations[k] = v
		}
	}
	// OLM v0 injects the variable after applying spec.config: it comes last, as here.
	dc.Env = append(dc.Env, corev1.EnvVar{Name: EnvOperatorConditionName, Value: csvName})
	if og != "" {
		if dc.Annotations == nil {
			dc.Annotations = map[string]string{}
		}
		dc.Annotations[AnnotationOperatorGroup] = og
	}
	return dc
}
