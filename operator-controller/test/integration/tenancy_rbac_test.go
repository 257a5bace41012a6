package integration

// Tenancy (docs/tenancy.md): the document's RBAC recipes, its operator requester policy and its
// "Who may do what" table, applied as written there to a real kube-apiserver and checked by
// impersonating users. The document is parsed here, so the two cannot drift apart: a recipe or a
// table cell changed there is what these tests check.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/platform/apiservertest"
)

var (
	tenancyDoc = filepath.Join("..", "..", "..", "docs", "tenancy.md")

	tenancyOperatorKind = apiservertest.Kind{Group: "operators.operatorframework.io", Version: "v1alpha1", Kind: "Operator", Resource: "operators"}
	tenancyBDKind       = apiservertest.Kind{Group: "core.rukpak.io", Version: "v1alpha1", Kind: "BundleDeployment", Resource: "bundledeployments"}
	tenancyCatalogKind  = apiservertest.Kind{Group: "catalogd.operatorframework.io", Version: "v1alpha1", Kind: "Catalog", Resource: "catalogs"}
	tenancyWidgetKind   = apiservertest.Kind{Group: "example.com", Version: "v1", Kind: "Widget", Resource: "widgets"}

	// tenancyRecipes are the recipes the document must keep: dropping one fails the tests instead of
	// silently testing less.
	tenancyRecipes = []string{"olmv1-admin", "olmv1-catalog-curator", "olmv1-viewer", "olmv1-operator-requester", "widgets-in-team-a"}
)

const (
	tenancyRequestedBy = "example.com/requested-by"
	tenancyPolicy      = "olmv1-operator-requesters"
	tenancyRequesters  = "olmv1:operator-requesters"
	tenancyTeamAAdmins = "team-a:admins"
)

// TestTenancyRoleMatrix checks every cell of the table "Who may do what": one impersonated user per
// row, holding exactly the row's groups, and one real request per column (a SubjectAccessReview for
// CatalogMetadata, which catalogd serves through the aggregation layer and authorizes with the same
// review).
func TestTenancyRoleMatrix(t *testing.T) {
	doc := setUpTenancy(t)

	installed, err := tenancyOperatorKind.Object("tenancy-installed", `packageName: installed-operator`)
	if err != nil {
		t.Fatal(err)
	}
	createAsAdmin(t, installed)
	installed.Object["status"] = map[string]any{"conditions": []any{map[string]any{
		"type": "Installed", "status": "True", "reason": "InstallationSucceeded",
		"message": "installed", "lastTransitionTime": "2024-01-01T00:00:00Z",
	}}}
	if err := suite.Client.Status().Update(t.Context(), installed); err != nil {
		t.Fatalf("writing the status of Operator %s: %v", installed.GetName(), err)
	}

	actions := map[string]func(t *testing.T, u tenancyUser) error{
		"create Operator": func(t *testing.T, u tenancyUser) error {
			// Shaped to pass the requester policy, so that its row tests the policy's happy path.
			return u.create(t, tenancyObject(t, tenancyOperatorKind, "tenancy-by-"+u.name, `
packageName: matrix-operator
installNamespace: operators-matrix
`, map[string]string{tenancyRequestedBy: u.name}))
		},
		"create BundleDeployment": func(t *testing.T, u tenancyUser) error {
			return u.create(t, tenancyObject(t, tenancyBDKind, "tenancy-by-"+u.name, `
provisionerClassName: core-rukpak-io-plain
installNamespace: default
source: {type: Image, image: {ref: "quay.io/org/bundle:v1"}}
`, nil))
		},
		"create Catalog": func(t *testing.T, u tenancyUser) error {
			return u.create(t, tenancyObject(t, tenancyCatalogKind, "tenancy-by-"+u.name,
				`source: {type: Image, image: {ref: "quay.io/org/catalog:v1"}}`, nil))
		},
		"list CatalogMetadata": func(t *testing.T, u tenancyUser) error {
			return u.review(t, authorizationv1.ResourceAttributes{
				Group: "metadata.catalogd.operatorframework.io", Version: "v1alpha1", Resource: "catalogmetadata", Verb: "list",
			})
		},
		"get Operator status": func(t *testing.T, u tenancyUser) error {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(tenancyOperatorKind.GroupVersionKind())
			if err := u.client.Get(t.Context(), client.ObjectKey{Name: installed.GetName()}, got); err != nil {
				return err
			}
			conditions, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			if len(conditions) == 0 {
				t.Errorf("%s read Operator %s without its status", u.name, got.GetName())
			}
			return nil
		},
		"list BundleDeployments": func(t *testing.T, u tenancyUser) error {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(tenancyBDKind.GroupVersionKind())
			return u.client.List(t.Context(), list)
		},
	}

	if len(doc.matrix.rows) == 0 {
		t.Fatalf("%s: the table under <!-- tenancy-matrix --> has no rows", tenancyDoc)
	}
	for _, column := range doc.matrix.columns {
		if actions[column] == nil {
			t.Fatalf("%s: the table has a column %q that this test does not know how to check", tenancyDoc, column)
		}
	}
	for _, row := range doc.matrix.rows {
		u := impersonate(t, "member-of-"+strings.NewReplacer(":", "-").Replace(row.groups[0]), row.groups...)
		for i, column := range doc.matrix.columns {
			t.Run(row.label+"/"+column, func(t *testing.T) {
				err := actions[column](t, u)
				switch {
				case err == nil && !row.allowed[i]:
					t.Errorf("%s (groups %v) may %s; %s says no", u.name, row.groups, column, tenancyDoc)
				case err != nil && !apierrors.IsForbidden(err):
					t.Fatalf("%s (groups %v), %s: %v", u.name, row.groups, column, err)
				case err != nil && row.allowed[i]:
					t.Errorf("%s (groups %v) may not %s; %s says yes: %v", u.name, row.groups, column, tenancyDoc, err)
				}
			})
		}
	}
}

// TestTenancyOperatorRequesterPolicy checks each rule of the requester policy: the document's example
// is accepted, an Operator breaking one rule is refused with that rule's message, and requesters
// change and delete only their own Operators.
func TestTenancyOperatorRequesterPolicy(t *testing.T) {
	doc := setUpTenancy(t)
	rita := impersonate(t, "rita", tenancyRequesters, tenancyTeamAAdmins)
	rex := impersonate(t, "rex", tenancyRequesters)

	// Install namespaces named as the policy asks, in which rita was given one way to run code or take
	// credentials anyway: the authorizer checks must catch each.
	leaky := []struct {
		ns                    string
		group, resource, verb string
	}{
		{"operators-leaky-pods", "", "pods", "create"},
		{"operators-leaky-deploy", "apps", "deployments", "create"},
		{"operators-leaky-exec", "", "pods/exec", "create"},
		{"operators-leaky-token", "", "serviceaccounts/token", "create"},
		{"operators-leaky-secrets", "", "secrets", "get"},
	}
	for _, l := range leaky {
		grantInNamespace(t, l.ns, "tenancy-leak", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "rita"},
			rbacv1.PolicyRule{APIGroups: []string{l.group}, Resources: []string{l.resource}, Verbs: []string{l.verb}})
	}

	example := doc.examples["requested-operator"]
	if len(example) != 1 {
		t.Fatalf("%s: want one object in the tenancy-example requested-operator, got %d", tenancyDoc, len(example))
	}
	if got := example[0].GetAnnotations()[tenancyRequestedBy]; got != "rita" {
		t.Fatalf("%s: the example Operator's %s is %q; this test impersonates rita", tenancyDoc, tenancyRequestedBy, got)
	}
	if err := rita.create(t, example[0]); err != nil {
		t.Fatalf("rita creating the document's example Operator: %v", err)
	}

	mine := map[string]string{tenancyRequestedBy: "rita"}
	const (
		wantAnnotation = `set the annotation example.com/requested-by: "rita"`
		wantPrefix     = `spec.installNamespace must be set and start with "operators-"`
		wantNoAccess   = "you may run Pods, exec into them, create ServiceAccount tokens or read Secrets in namespace "
		wantWatch      = "spec.watchNamespaces may name one namespace"
		wantCollision  = "spec.collisionPolicy must be Prevent"
		wantConfig     = "spec.config may only set deploymentConfig.resources"
	)
	type requesterCase struct {
		name        string
		spec        string
		annotations map[string]string
		want        string // empty: accepted
	}
	cases := []requesterCase{
		{name: "own namespace mode", annotations: mine, spec: `{packageName: own, installNamespace: operators-own, watchNamespaces: [operators-own]}`},
		{name: "default mode with resources", annotations: mine, spec: `
packageName: resources
installNamespace: operators-resources
config: {deploymentConfig: {resources: {limits: {memory: 512Mi}}}}
`},
		{name: "no annotation", spec: `{packageName: a, installNamespace: operators-a}`, want: wantAnnotation},
		{name: "another user's annotation", annotations: map[string]string{tenancyRequestedBy: "rex"},
			spec: `{packageName: a, installNamespace: operators-a}`, want: wantAnnotation},
		{name: "no install namespace", annotations: mine, spec: `{packageName: a}`, want: wantPrefix},
		{name: "install namespace of a tenant", annotations: mine, spec: `{packageName: a, installNamespace: team-a}`, want: wantPrefix},
		{name: "watches a namespace rita does not administer", annotations: mine,
			spec: `{packageName: a, installNamespace: operators-a, watchNamespaces: [team-b]}`, want: wantWatch},
		{name: "watches two namespaces", annotations: mine,
			spec: `{packageName: a, installNamespace: operators-a, watchNamespaces: [team-a, operators-a]}`, want: wantWatch},
		{name: "collisionPolicy IfNoController", annotations: mine,
			spec: `{packageName: a, installNamespace: operators-a, collisionPolicy: IfNoController}`, want: wantCollision},
		{name: "collisionPolicy None", annotations: mine,
			spec: `{packageName: a, installNamespace: operators-a, collisionPolicy: None}`, want: wantCollision},
		{name: "deploymentConfig volumes", annotations: mine, spec: `
packageName: a
installNamespace: operators-a
config: {deploymentConfig: {volumes: [{name: s, secret: {secretName: s}}], volumeMounts: [{name: s, mountPath: /s}]}}
`, want: wantConfig},
		{name: "deploymentConfig env", annotations: mine,
			spec: `{packageName: a, installNamespace: operators-a, config: {deploymentConfig: {env: [{name: HTTPS_PROXY, value: "http://x"}]}}}`, want: wantConfig},
		{name: "config watchNamespaces", annotations: mine,
			spec: `{packageName: a, installNamespace: operators-a, config: {watchNamespaces: [team-b]}}`, want: wantConfig},
	}
	for _, l := range leaky {
		cases = append(cases, requesterCase{name: "install namespace " + l.ns, annotations: mine,
			spec: fmt.Sprintf(`{packageName: a, installNamespace: %s}`, l.ns), want: wantNoAccess + l.ns})
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := rita.create(t, tenancyObject(t, tenancyOperatorKind, fmt.Sprintf("tenancy-rita-%d", i), tc.spec, tc.annotations))
			expectPolicy(t, err, tc.want)
		})
	}

	// Changing and deleting: only one's own Operators, and the annotation stays.
	own := example[0].GetName()
	t.Run("rita changes her Operator", func(t *testing.T) {
		expectPolicy(t, rita.patch(t, tenancyOperatorKind, own, `{"spec":{"version":">=1.0.0"}}`), "")
	})
	t.Run("rita hands her Operator to rex", func(t *testing.T) {
		expectPolicy(t, rita.patch(t, tenancyOperatorKind, own, `{"metadata":{"annotations":{"example.com/requested-by":"rex"}}}`), wantAnnotation)
	})
	t.Run("rita removes the annotation", func(t *testing.T) {
		expectPolicy(t, rita.patch(t, tenancyOperatorKind, own, `{"metadata":{"annotations":{"example.com/requested-by":null}}}`), wantAnnotation)
	})
	adminsOperator := tenancyObject(t, tenancyOperatorKind, "tenancy-admins-operator", `{packageName: admins, installNamespace: team-a}`, nil)
	createAsAdmin(t, adminsOperator)
	rexOperator := tenancyObject(t, tenancyOperatorKind, "tenancy-rex", `{packageName: rex, installNamespace: operators-rex}`, map[string]string{tenancyRequestedBy: "rex"})
	if err := rex.create(t, rexOperator); err != nil {
		t.Fatalf("rex creating his Operator: %v", err)
	}
	for _, name := range []string{adminsOperator.GetName(), rexOperator.GetName()} {
		wantNotHers := fmt.Sprintf("Operator %s was not requested by rita", name)
		t.Run("rita changes "+name, func(t *testing.T) {
			expectPolicy(t, rita.patch(t, tenancyOperatorKind, name, `{"spec":{"version":">=1.0.0"}}`), wantNotHers)
		})
		t.Run("rita deletes "+name, func(t *testing.T) {
			expectPolicy(t, rita.delete(t, tenancyOperatorKind, name), wantNotHers)
		})
	}
	t.Run("rita deletes her Operator", func(t *testing.T) {
		expectPolicy(t, rita.delete(t, tenancyOperatorKind, own), "")
	})
	t.Run("rita creates a BundleDeployment", func(t *testing.T) {
		err := rita.create(t, tenancyObject(t, tenancyBDKind, "tenancy-rita", `
provisionerClassName: core-rukpak-io-plain
installNamespace: operators-a
source: {type: Image, image: {ref: "quay.io/org/bundle:v1"}}
`, nil))
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot create resource "bundledeployments"`) {
			t.Fatalf("want RBAC to forbid it, got %v", err)
		}
	})
}

// TestTenancyTenantsUseAnOperatorsAPI checks the widgets-in-team-a recipe: team-a's developers use
// the Widget API of an installed operator in team-a only.
func TestTenancyTenantsUseAnOperatorsAPI(t *testing.T) {
	setUpTenancy(t)
	dev := impersonate(t, "dana", "team-a:developers")
	widget := func(ns string) *unstructured.Unstructured {
		w := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(1)}}}
		w.SetGroupVersionKind(tenancyWidgetKind.GroupVersionKind())
		w.SetName("tenancy-widget")
		w.SetNamespace(ns)
		return w
	}
	if err := dev.create(t, widget("team-a")); err != nil {
		t.Fatalf("a developer of team-a creating a Widget in team-a: %v", err)
	}
	if err := dev.create(t, widget("team-b")); !apierrors.IsForbidden(err) {
		t.Errorf("a developer of team-a creating a Widget in team-b: want Forbidden, got %v", err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(tenancyWidgetKind.GroupVersionKind())
	if err := dev.client.List(t.Context(), list, client.InNamespace("team-a")); err != nil {
		t.Errorf("a developer of team-a listing Widgets in team-a: %v", err)
	}
	if err := dev.client.List(t.Context(), list); !apierrors.IsForbidden(err) {
		t.Errorf("a developer of team-a listing Widgets in every namespace: want Forbidden, got %v", err)
	}
	tenant := impersonate(t, "tina", "olmv1:tenants")
	if err := tenant.create(t, widget("team-a")); !apierrors.IsForbidden(err) {
		t.Errorf("a tenant who is not a developer of team-a creating a Widget there: want Forbidden, got %v", err)
	}
}

// tenancyDocument is what the tests read from docs/tenancy.md.
type tenancyDocument struct {
	recipes  map[string][]*unstructured.Unstructured // "# tenancy-recipe: <name>" blocks
	examples map[string][]*unstructured.Unstructured // "# tenancy-example: <name>" blocks
	matrix   tenancyMatrix
}

type tenancyMatrix struct {
	columns []string
	rows    []tenancyMatrixRow
}

type tenancyMatrixRow struct {
	label   string
	groups  []string
	allowed []bool
}

var tenancyMarker = regexp.MustCompile(`^# tenancy-(recipe|example): (\S+)$`)

// readTenancyDoc parses the marked yaml blocks and the table that follows <!-- tenancy-matrix -->.
func readTenancyDoc(t *testing.T) tenancyDocument {
	t.Helper()
	raw, err := os.ReadFile(tenancyDoc)
	if err != nil {
		t.Fatalf("reading the tenancy design: %v", err)
	}
	doc := tenancyDocument{recipes: map[string][]*unstructured.Unstructured{}, examples: map[string][]*unstructured.Unstructured{}}
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		switch {
		case strings.TrimSpace(lines[i]) == "```yaml":
			start := i + 1
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			}
			block := lines[start:i]
			if len(block) == 0 {
				continue
			}
			m := tenancyMarker.FindStringSubmatch(strings.TrimSpace(block[0]))
			if m == nil {
				continue
			}
			into := doc.recipes
			if m[1] == "example" {
				into = doc.examples
			}
			if into[m[2]] != nil {
				t.Fatalf("%s line %d: a second block named %q", tenancyDoc, start, m[2])
			}
			into[m[2]] = decodeTenancyBlock(t, m[2], strings.Join(block, "\n"))
		case strings.TrimSpace(lines[i]) == "<!-- tenancy-matrix -->":
			var table [][]string
			for i++; i < len(lines); i++ {
				line := strings.TrimSpace(lines[i])
				if !strings.HasPrefix(line, "|") {
					if len(table) > 0 {
						break
					}
					continue
				}
				var cells []string
				for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
					cells = append(cells, strings.TrimSpace(c))
				}
				table = append(table, cells)
			}
			doc.matrix = parseTenancyMatrix(t, table)
		}
	}
	for _, name := range tenancyRecipes {
		if len(doc.recipes[name]) == 0 {
			t.Errorf("%s has no yaml block starting with \"# tenancy-recipe: %s\"", tenancyDoc, name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return doc
}

func decodeTenancyBlock(t *testing.T, name, block string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(block)))
	for {
		data, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s, block %s: %v", tenancyDoc, name, err)
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatalf("%s, block %s: %v", tenancyDoc, name, err)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}

var backticked = regexp.MustCompile("`([^`]+)`")

func parseTenancyMatrix(t *testing.T, table [][]string) tenancyMatrix {
	t.Helper()
	if len(table) < 3 {
		t.Fatalf("%s: the table after <!-- tenancy-matrix --> needs a header, a separator and rows", tenancyDoc)
	}
	m := tenancyMatrix{columns: table[0][1:]}
	for _, cells := range table[2:] {
		row := tenancyMatrixRow{}
		for _, g := range backticked.FindAllStringSubmatch(cells[0], -1) {
			row.groups = append(row.groups, g[1])
		}
		if len(row.groups) == 0 || len(cells) != len(table[0]) {
			t.Fatalf("%s: matrix row %q: want the groups in backticks and %d cells", tenancyDoc, cells[0], len(table[0]))
		}
		row.label = strings.Join(row.groups, ",")
		for _, c := range cells[1:] {
			switch answer := strings.ToLower(c); {
			case strings.HasPrefix(answer, "yes"):
				row.allowed = append(row.allowed, true)
			case strings.HasPrefix(answer, "no"):
				row.allowed = append(row.allowed, false)
			default:
				t.Fatalf("%s: matrix row %q: cell %q is neither yes nor no", tenancyDoc, cells[0], c)
			}
		}
		m.rows = append(m.rows, row)
	}
	return m
}

// setUpTenancy installs the Catalog, BundleDeployment and Widget CRDs next to the suite's Operator
// CRD, creates namespaces team-a and team-b, makes team-a:admins admins of team-a, creates every
// recipe of the document (removed when the test ends) and waits until RBAC and the admission policy
// answer.
func setUpTenancy(t *testing.T) tenancyDocument {
	t.Helper()
	doc := readTenancyDoc(t)
	root := filepath.Join("..", "..", "..")
	if _, err := envtest.InstallCRDs(suite.Config, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(root, "catalogd", "config", "crd", "bases"), filepath.Join(root, "rukpak", "config", "crd", "bases")},
		CRDs:               []*apiextensionsv1.CustomResourceDefinition{widgetCRD(t)},
		ErrorIfPathMissing: true,
	}); err != nil {
		t.Fatalf("installing the Catalog, BundleDeployment and Widget CRDs: %v", err)
	}
	// envtest runs no kube-controller-manager, so the aggregated built-in admin role stays empty:
	// team-a's admins get every verb on every resource of team-a instead, which is more than admin.
	grantInNamespace(t, "team-a", "tenancy-namespace-admin",
		rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: tenancyTeamAAdmins},
		rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}})
	ensureNamespace(t, "team-b")

	for _, name := range tenancyRecipes {
		for _, obj := range doc.recipes[name] {
			createAsAdmin(t, obj.DeepCopy())
		}
	}
	waitForTenancyRecipes(t)
	return doc
}

// waitForTenancyRecipes waits until the RBAC authorizer knows the recipes' bindings and the
// admission policy refuses what it should.
func waitForTenancyRecipes(t *testing.T) {
	t.Helper()
	requester := impersonate(t, "probe-requester", tenancyRequesters)
	dev := impersonate(t, "probe-admin", "team-a:developers", "olmv1:admins")
	bad := tenancyObject(t, tenancyOperatorKind, "tenancy-probe", `{packageName: probe}`, nil)
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if last = dev.review(t, authorizationv1.ResourceAttributes{Group: "example.com", Resource: "widgets", Verb: "create", Namespace: "team-a"}); last != nil {
			return false, nil
		}
		if last = dev.review(t, authorizationv1.ResourceAttributes{Group: "core.rukpak.io", Resource: "bundledeployments", Verb: "create"}); last != nil {
			return false, nil
		}
		// A dry run goes through admission like a real request.
		last = requester.client.Create(ctx, bad.DeepCopy(), client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), tenancyPolicy), nil
	})
	if err != nil {
		t.Fatalf("the recipes of %s did not take effect within 30s (last answer: %v)", tenancyDoc, last)
	}
}

// tenancyUser is a client that impersonates one user.
type tenancyUser struct {
	name   string
	groups []string
	client client.Client
}

func impersonate(t *testing.T, name string, groups ...string) tenancyUser {
	t.Helper()
	cfg := rest.CopyConfig(suite.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: groups}
	c, err := client.New(cfg, client.Options{Scheme: suite.Client.Scheme(), Mapper: suite.Client.RESTMapper()})
	if err != nil {
		t.Fatalf("creating a client for %s: %v", name, err)
	}
	return tenancyUser{name: name, groups: groups, client: c}
}

// create creates obj as the user; what was created is deleted when the test ends.
func (u tenancyUser) create(t *testing.T, obj client.Object) error {
	t.Helper()
	err := u.client.Create(t.Context(), obj)
	if err == nil {
		deleteWhenDone(t, obj)
	}
	return err
}

func (u tenancyUser) patch(t *testing.T, k apiservertest.Kind, name, mergePatch string) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(k.GroupVersionKind())
	obj.SetName(name)
	return u.client.Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(mergePatch)))
}

func (u tenancyUser) delete(t *testing.T, k apiservertest.Kind, name string) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(k.GroupVersionKind())
	obj.SetName(name)
	return u.client.Delete(t.Context(), obj)
}

// review asks the API server, as an administrator, whether the user may do what attrs say: the
// SubjectAccessReview an aggregated API server such as catalogd's sends. It returns a Forbidden error
// when the answer is no.
func (u tenancyUser) review(t *testing.T, attrs authorizationv1.ResourceAttributes) error {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               u.name,
		Groups:             append(slices.Clone(u.groups), "system:authenticated"),
		ResourceAttributes: &attrs,
	}}
	if err := suite.Client.Create(t.Context(), sar); err != nil {
		t.Fatalf("SubjectAccessReview for %s: %v", u.name, err)
	}
	if !sar.Status.Allowed {
		return apierrors.NewForbidden(schema.GroupResource{Group: attrs.Group, Resource: attrs.Resource}, attrs.Name,
			fmt.Errorf("SubjectAccessReview: %s may not %s (%s)", u.name, attrs.Verb, sar.Status.Reason))
	}
	return nil
}

// expectPolicy checks that err is nil when want is empty, else a refusal of the requester policy
// whose message contains want.
func expectPolicy(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("want it accepted, got %v", err)
	case want == "":
	case err == nil:
		t.Fatalf("want it refused by %s (%q), but it was accepted", tenancyPolicy, want)
	case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tenancyPolicy) || !strings.Contains(err.Error(), want):
		t.Fatalf("want a Forbidden error of %s containing %q, got %v", tenancyPolicy, want, err)
	}
}

func tenancyObject(t *testing.T, k apiservertest.Kind, name, spec string, annotations map[string]string) *unstructured.Unstructured {
	t.Helper()
	obj, err := k.Object(name, spec)
	if err != nil {
		t.Fatal(err)
	}
	obj.SetAnnotations(annotations)
	return obj
}

func createAsAdmin(t *testing.T, obj client.Object) {
	t.Helper()
	if err := suite.Client.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %s %q: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	deleteWhenDone(t, obj)
}

func deleteWhenDone(t *testing.T, obj client.Object) {
	t.Cleanup(func() {
		// t.Context() is canceled when cleanups run.
		if err := suite.Client.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s %q: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	})
}

// ensureNamespace creates ns unless it exists. Namespaces are left in place: envtest has no
// namespace controller to finish deleting them.
func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	err := suite.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
}

// grantInNamespace gives subject rule in ns with a Role and RoleBinding named name.
func grantInNamespace(t *testing.T, ns, name string, subject rbacv1.Subject, rule rbacv1.PolicyRule) {
	t.Helper()
	ensureNamespace(t, ns)
	meta := metav1.ObjectMeta{Name: name, Namespace: ns}
	createAsAdmin(t, &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{rule}})
	createAsAdmin(t, &rbacv1.RoleBinding{
		ObjectMeta: meta,
		Subjects:   []rbacv1.Subject{subject},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
	})
}

// widgetCRD stands for the API of an installed operator: a namespaced kind.
func widgetCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal([]byte(`
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`), crd); err != nil {
		t.Fatal(err)
	}
	return crd
}
