package apiservertest

import (
	"fmt"
	"slices"
	"strings"
)

// SourceCases are the validation cases of the Source union (rukpak's api/v1alpha1 Source), which both
// BundleDeployment.spec.source and Catalog.spec.source use. Spec holds the YAML of the source only;
// use InSpec to place them in a kind's spec.
func SourceCases() []Case {
	digest := "sha256:" + strings.Repeat("ab", 32)
	sha1 := strings.Repeat("0123456789", 4)
	sha256 := strings.Repeat("0123456789abcdef", 4)
	return slices.Concat(
		unionCases(digest, sha1, sha256),
		imageCases(digest),
		configMapsCases(),
		httpCases(),
		gitCases(sha1),
	)
}

// unionCases are the cases of the discriminator and the union members: one valid source of each
// type, and a member missing for its type or set for another. digest is an image digest, sha1 and
// sha256 are git commit ids.
func unionCases(digest, sha1, sha256 string) []Case {
	return []Case{
		{Name: "image by tag", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest"}}`},
		{Name: "image by tag with every option", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:v1", pullSecret: my-pull-secret, insecureSkipTLSVerify: true, pollInterval: 10m}}`},
		{Name: "image by digest", Spec: `{type: Image, image: {ref: "quay.io/org/catalog@` + digest + `"}}`},
		{Name: "configMaps as in the seed example", Spec: `{type: ConfigMaps, configMaps: [{configMap: {name: my-catalog-content}, path: configs}]}`},
		{Name: "configMaps without path and with nested paths", Spec: `{type: ConfigMaps, configMaps: [{configMap: {name: a}}, {configMap: {name: b.c}, path: x/y}, {configMap: {name: d}, path: ./x/a..b}]}`},
		{Name: "http with every option", Spec: `{type: HTTP, http: {url: "https://example.com/catalog.tar.gz", caSecret: my-ca, insecureSkipTLSVerify: false, pollInterval: 1h}}`},
		{Name: "http with a plain http URL and a port", Spec: `{type: HTTP, http: {url: "http://127.0.0.1:8080/catalog.json"}}`},
		{Name: "git branch with every option", Spec: `{type: Git, git: {repository: "https://github.com/org/repo.git", ref: {branch: main}, directory: catalogs/prod, authSecret: git-creds, pollInterval: 5m}}`},
		{Name: "git tag over ssh", Spec: `{type: Git, git: {repository: "ssh://git@example.com/org/repo.git", ref: {tag: v1.2.0}}}`},
		{Name: "git SHA-1 commit with an scp-like address", Spec: `{type: Git, git: {repository: "git@github.com:org/repo.git", ref: {commit: "` + sha1 + `"}}}`},
		{Name: "git SHA-256 commit from a file URL", Spec: `{type: Git, git: {repository: "file:///srv/git/repo", ref: {commit: "` + sha256 + `"}}}`},

		{Name: "type is required", Spec: `{image: {ref: "quay.io/org/catalog:latest"}}`,
			WantErrs: []string{"spec.source.type: Required value"}},
		{Name: "type must be a known one", Spec: `{type: OCI}`,
			WantErrs: []string{`spec.source.type: Unsupported value: "OCI"`}},
		{Name: "Image requires image", Spec: `{type: Image}`,
			WantErrs: []string{"image is required when type is Image"}},
		{Name: "ConfigMaps requires configMaps", Spec: `{type: ConfigMaps}`,
			WantErrs: []string{"configMaps is required when type is ConfigMaps"}},
		{Name: "HTTP requires http", Spec: `{type: HTTP}`,
			WantErrs: []string{"http is required when type is HTTP"}},
		{Name: "Git requires git", Spec: `{type: Git}`,
			WantErrs: []string{"git is required when type is Git"}},
		{Name: "image forbidden unless type is Image", Spec: `{type: ConfigMaps, configMaps: [{configMap: {name: a}}], image: {ref: "quay.io/org/catalog:latest"}}`,
			WantErrs: []string{"image must not be set unless type is Image"}},
		{Name: "configMaps forbidden unless type is ConfigMaps", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest"}, configMaps: [{configMap: {name: a}}]}`,
			WantErrs: []string{"configMaps must not be set unless type is ConfigMaps"}},
		{Name: "http forbidden unless type is HTTP", Spec: `{type: Git, git: {repository: "https://github.com/org/repo.git", ref: {branch: main}}, http: {url: "https://example.com/c.tgz"}}`,
			WantErrs: []string{"http must not be set unless type is HTTP"}},
		{Name: "git forbidden unless type is Git", Spec: `{type: HTTP, http: {url: "https://example.com/c.tgz"}, git: {repository: "https://github.com/org/repo.git", ref: {branch: main}}}`,
			WantErrs: []string{"git must not be set unless type is Git"}},
		{Name: "member of another type instead of the right one", Spec: `{type: Image, http: {url: "https://example.com/c.tgz"}}`,
			WantErrs: []string{"image is required when type is Image", "http must not be set unless type is HTTP"}},
	}
}

// imageCases are the cases of the Image source (image); digest is an image digest.
func imageCases(digest string) []Case {
	return []Case{
		{Name: "image.ref is required", Spec: `{type: Image, image: {pullSecret: s}}`,
			WantErrs: []string{"spec.source.image.ref: Required value"}},
		{Name: "image.ref must not be empty", Spec: `{type: Image, image: {ref: ""}}`,
			WantErrs: []string{"spec.source.image.ref", "at least 1 chars long"}},
		{Name: "image.ref has a maximum length", Spec: `{type: Image, image: {ref: "quay.io/` + strings.Repeat("a", 1000) + `"}}`,
			WantErrs: []string{"spec.source.image.ref: Too long"}},
		{Name: "image.pollInterval is forbidden with a digest", Spec: `{type: Image, image: {ref: "quay.io/org/catalog@` + digest + `", pollInterval: 10m}}`,
			WantErrs: []string{"pollInterval must not be set when ref is a digest reference"}},
		{Name: "image.pollInterval must be positive", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", pollInterval: 0s}}`,
			WantErrs: []string{"pollInterval must be a positive duration"}},
		{Name: "image.pollInterval must be a duration", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", pollInterval: often}}`,
			WantErrs: []string{"spec.source.image.pollInterval", "pollInterval must be a positive duration"}},
		{Name: "image.pullSecret must be a Secret name", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", pullSecret: My_Secret}}`,
			WantErrs: []string{"spec.source.image.pullSecret", "should match"}},

		{Name: "image.verify with cosign keys", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", verify: {provider: Cosign, cosign: {secretRef: {name: catalog-keys}}}}}`},
		{Name: "image.verify.provider is required", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", verify: {cosign: {secretRef: {name: k}}}}}`,
			WantErrs: []string{"spec.source.image.verify.provider: Required value"}},
		{Name: "image.verify.provider must be a known one", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", verify: {provider: Notation}}}`,
			WantErrs: []string{`spec.source.image.verify.provider: Unsupported value: "Notation"`}},
		{Name: "image.verify Cosign requires cosign", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", verify: {provider: Cosign}}}`,
			WantErrs: []string{"cosign is required when provider is Cosign"}},
		{Name: "image.verify.cosign requires secretRef or keyless", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", verify: {provider: Cosign, cosign: {}}}}`,
			WantErrs: []string{"exactly one of secretRef (public keys) and keyless (certificate identity) is required"}},
		{Name: "image.verify.cosign keyless with a subject", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", verify: {provider: Cosign, cosign: {keyless: {issuer: "https://token.actions.githubusercontent.com", subject: "https://github.com/org/repo/.github/workflows/release.yaml@refs/heads/main", trustedRootRef: {name: sigstore-root}}}}}}`},
		{Name: "image.verify.cosign keyless with a subjectRegExp and a Secret", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", verify: {provider: Cosign, cosign: {keyless: {issuer: "https://accounts.google.com", subjectRegExp: ".*@example\\.com", trustedRootRef: {kind: Secret, name: sigstore-root, key: root.json}}}}}}`},
		{Name: "image.verify.cosign keyless and secretRef are exclusive", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", verify: {provider: Cosign, cosign: {secretRef: {name: k}, keyless: {issuer: i, subject: s, trustedRootRef: {name: r}}}}}}`,
			WantErrs: []string{"exactly one of secretRef (public keys) and keyless (certificate identity) is required"}},
		{Name: "image.verify.cosign.keyless needs a subject or a subjectRegExp", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", verify: {provider: Cosign, cosign: {keyless: {issuer: i, trustedRootRef: {name: r}}}}}}`,
			WantErrs: []string{"exactly one of subject and subjectRegExp is required"}},
		{Name: "image.verify.cosign.keyless subject and subjectRegExp are exclusive", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", verify: {provider: Cosign, cosign: {keyless: {issuer: i, subject: s, subjectRegExp: ".*", trustedRootRef: {name: r}}}}}}`,
			WantErrs: []string{"exactly one of subject and subjectRegExp is required"}},
		{Name: "image.verify.cosign.keyless requires issuer and trustedRootRef", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", verify: {provider: Cosign, cosign: {keyless: {subject: s}}}}}`,
			WantErrs: []string{"spec.source.image.verify.cosign.keyless.issuer: Required value", "spec.source.image.verify.cosign.keyless.trustedRootRef: Required value"}},
		{Name: "image.verify.cosign.keyless.trustedRootRef.kind must be ConfigMap or Secret", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", verify: {provider: Cosign, cosign: {keyless: {issuer: i, subject: s, trustedRootRef: {kind: Pod, name: r}}}}}}`,
			WantErrs: []string{`spec.source.image.verify.cosign.keyless.trustedRootRef.kind: Unsupported value: "Pod"`}},
		{Name: "image.verify.cosign.secretRef.name must be a Secret name", Spec: `{type: Image, image: {ref: "quay.io/org/catalog:latest", verify: {provider: Cosign, cosign: {secretRef: {name: My_Keys}}}}}`,
			WantErrs: []string{"spec.source.image.verify.cosign.secretRef.name", "should match"}},
	}
}

// configMapsCases are the cases of the ConfigMaps source (configMaps).
func configMapsCases() []Case {
	tooManyConfigMaps := "type: ConfigMaps\nconfigMaps:\n"
	for i := range 65 {
		tooManyConfigMaps += fmt.Sprintf("- configMap: {name: cm-%d}\n", i)
	}
	return []Case{
		{Name: "configMaps must not be empty", Spec: `{type: ConfigMaps, configMaps: []}`,
			WantErrs: []string{"spec.source.configMaps", "should have at least 1 items"}},
		{Name: "configMaps has a maximum length", Spec: tooManyConfigMaps,
			WantErrs: []string{"spec.source.configMaps: Too many"}},
		{Name: "configMaps[].configMap is required", Spec: `{type: ConfigMaps, configMaps: [{path: configs}]}`,
			WantErrs: []string{"spec.source.configMaps[0].configMap: Required value"}},
		{Name: "configMaps[].configMap.name is required", Spec: `{type: ConfigMaps, configMaps: [{configMap: {}}]}`,
			WantErrs: []string{"spec.source.configMaps[0].configMap.name: Required value"}},
		{Name: "configMaps[].configMap.name must be a ConfigMap name", Spec: `{type: ConfigMaps, configMaps: [{configMap: {name: Bad_Name}}]}`,
			WantErrs: []string{"spec.source.configMaps[0].configMap.name", "should match"}},
		{Name: "configMaps[].path must be relative", Spec: `{type: ConfigMaps, configMaps: [{configMap: {name: a}, path: /etc}]}`,
			WantErrs: []string{"path must be relative (must not start with '/')"}},
		{Name: "configMaps[].path must not escape", Spec: `{type: ConfigMaps, configMaps: [{configMap: {name: a}, path: ../x}]}`,
			WantErrs: []string{"path must not contain '..' elements"}},
		{Name: "configMaps[].path must not contain inner ..", Spec: `{type: ConfigMaps, configMaps: [{configMap: {name: a}, path: a/../../b}]}`,
			WantErrs: []string{"path must not contain '..' elements"}},
		{Name: "configMaps[].path must not be ..", Spec: `{type: ConfigMaps, configMaps: [{configMap: {name: a}, path: ..}]}`,
			WantErrs: []string{"path must not contain '..' elements"}},
	}
}

// httpCases are the cases of the HTTP source (http).
func httpCases() []Case {
	return []Case{
		{Name: "http.url is required", Spec: `{type: HTTP, http: {caSecret: ca}}`,
			WantErrs: []string{"spec.source.http.url: Required value"}},
		{Name: "http.url must be http or https", Spec: `{type: HTTP, http: {url: "ftp://example.com/c.tgz"}}`,
			WantErrs: []string{"url must be an absolute http:// or https:// URL"}},
		{Name: "http.url must be absolute", Spec: `{type: HTTP, http: {url: "/catalog.tgz"}}`,
			WantErrs: []string{"url must be an absolute http:// or https:// URL"}},
		{Name: "http.url must have a host", Spec: `{type: HTTP, http: {url: "https:///catalog.tgz"}}`,
			WantErrs: []string{"url must be an absolute http:// or https:// URL"}},
		{Name: "http.url must be a URL", Spec: `{type: HTTP, http: {url: "example dot com"}}`,
			WantErrs: []string{"url must be an absolute http:// or https:// URL"}},
		{Name: "http.caSecret must be a Secret name", Spec: `{type: HTTP, http: {url: "https://example.com/c.tgz", caSecret: "-ca"}}`,
			WantErrs: []string{"spec.source.http.caSecret", "should match"}},
		{Name: "http.pollInterval must be positive", Spec: `{type: HTTP, http: {url: "https://example.com/c.tgz", pollInterval: -1m}}`,
			WantErrs: []string{"pollInterval must be a positive duration"}},
	}
}

// gitCases are the cases of the Git source (git); sha1 is a git commit id.
func gitCases(sha1 string) []Case {
	return []Case{
		{Name: "git.repository is required", Spec: `{type: Git, git: {ref: {branch: main}}}`,
			WantErrs: []string{"spec.source.git.repository: Required value"}},
		{Name: "git.repository must be a URL or an scp-like address", Spec: `{type: Git, git: {repository: "github.com/org/repo", ref: {branch: main}}}`,
			WantErrs: []string{"repository must be an https://, http://, ssh://, git:// or file:// URL"}},
		{Name: "git.ref is required", Spec: `{type: Git, git: {repository: "https://github.com/org/repo.git"}}`,
			WantErrs: []string{"spec.source.git.ref: Required value"}},
		{Name: "git.ref needs one of branch, tag, commit", Spec: `{type: Git, git: {repository: "https://github.com/org/repo.git", ref: {}}}`,
			WantErrs: []string{"exactly one of branch, tag or commit must be set"}},
		{Name: "git.ref takes only one of branch, tag, commit", Spec: `{type: Git, git: {repository: "https://github.com/org/repo.git", ref: {branch: main, tag: v1}}}`,
			WantErrs: []string{"exactly one of branch, tag or commit must be set"}},
		{Name: "git.ref.branch must not be empty", Spec: `{type: Git, git: {repository: "https://github.com/org/repo.git", ref: {branch: ""}}}`,
			WantErrs: []string{"spec.source.git.ref.branch", "at least 1 chars long"}},
		{Name: "git.ref.commit must be a full id", Spec: `{type: Git, git: {repository: "https://github.com/org/repo.git", ref: {commit: abc1234}}}`,
			WantErrs: []string{"commit must be a full 40-character (SHA-1) or 64-character (SHA-256) lowercase hexadecimal commit id"}},
		{Name: "git.ref.commit must be lowercase hex", Spec: `{type: Git, git: {repository: "https://github.com/org/repo.git", ref: {commit: ` + strings.ToUpper(strings.Repeat("abcdef0123", 4)) + `}}}`,
			WantErrs: []string{"commit must be a full 40-character (SHA-1) or 64-character (SHA-256) lowercase hexadecimal commit id"}},
		{Name: "git.pollInterval is forbidden with a commit", Spec: `{type: Git, git: {repository: "https://github.com/org/repo.git", ref: {commit: "` + sha1 + `"}, pollInterval: 5m}}`,
			WantErrs: []string{"pollInterval must not be set when ref.commit is set"}},
		{Name: "git.directory must be relative", Spec: `{type: Git, git: {repository: "https://github.com/org/repo.git", ref: {branch: main}, directory: /catalog}}`,
			WantErrs: []string{"directory must be relative (must not start with '/')"}},
		{Name: "git.directory must not escape", Spec: `{type: Git, git: {repository: "https://github.com/org/repo.git", ref: {branch: main}, directory: catalog/..}}`,
			WantErrs: []string{"directory must not contain '..' elements"}},
		{Name: "git.authSecret must be a Secret name", Spec: `{type: Git, git: {repository: "https://github.com/org/repo.git", ref: {branch: main}, authSecret: "creds!"}}`,
			WantErrs: []string{"spec.source.git.authSecret", "should match"}},
	}
}

// InSpec places source cases (from SourceCases) at spec.source of baseSpec, a valid spec of the kind
// under test, and prefixes their names with "source/".
func InSpec(baseSpec string, sourceCases []Case) []Case {
	out := make([]Case, 0, len(sourceCases))
	for _, c := range sourceCases {
		c.Name = "source/" + c.Name
		c.Spec = SpecWith(baseSpec, "source", c.Spec)
		out = append(out, c)
	}
	return out
}
