package chart

// StaticManifestPath is where `make generate` writes the chart rendered for users without Helm.
const StaticManifestPath = "deploy/manifests/olmv1.yaml"

// StaticManifestHeader starts the static manifest.
const StaticManifestHeader = `# OLM v1, rendered from deploy/charts/olmv1 by ` + "`make generate`" + ` (do not edit).
# TLS mode certManager: cert-manager must be installed first (https://cert-manager.io). The selfSigned
# mode generates certificates at render time, which would change this file on every render: use the
# chart for it. Apply with server-side apply (the CRDs are larger than client-side apply allows):
#   kubectl apply --server-side -f deploy/manifests/olmv1.yaml
`

// StaticManifestValues are the values of the static manifest: certManager mode renders the same
// bytes every time (no generated keys), unlike selfSigned.
func StaticManifestValues() map[string]any {
	return map[string]any{"tls": map[string]any{"mode": "certManager"}}
}
