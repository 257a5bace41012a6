// Package imagebuild builds OCI images from directories and pushes them to a registry, in Go and
// without Docker. It is how the tests and the local development loop turn testdata folders into
// the images that catalogd and rukpak pull.
//
// Four kinds are built:
//
//   - CatalogImage: a file-based catalog (FBC) directory, copied under /configs with the label
//     operators.operatorframework.io.index.configs.v1=/configs.
//   - RegistryV1BundleImage: an OLM registry+v1 bundle (manifests/ and metadata/annotations.yaml),
//     copied to the image root, with the annotations as image labels.
//   - PlainBundleImage: a plain bundle (manifests/), copied to the image root.
//   - HelmChartArtifact: a Helm chart (a directory or a packaged .tgz) as an OCI artifact laid
//     out as `helm push` lays it out (Helm's config and chart-content media types).
//
// # Deterministic output
//
// The same directory content always gives the same image digest, on any machine: entries are
// written in lexical order, every timestamp is the Unix epoch, owners are uid/gid 0 with no names,
// directories get mode 0755, files 0644 (0755 when any execute bit is set), and the image config
// carries a fixed creation time and platform (linux/amd64; the content itself is not executable).
//
// # What goes in, and what is refused
//
// Nothing is skipped silently. Every regular file and directory under the source directory is
// copied (a registry+v1 or plain bundle directory is copied whole, so for example tests/scorecard
// travels along with manifests/ and metadata/). The only files left out are those a Helm chart's
// .helmignore names, as `helm package` does.
//
// Symlinks are followed only when they stay inside the source directory:
//
//   - in image layers (catalogs and bundles) a symlink is kept as a symlink, rewritten as a
//     relative link to the file or directory it resolves to;
//   - in a Helm chart archive a symlink to a file is stored as a copy of that file (Helm's chart
//     loader reads only regular files), and a symlink to a directory is refused;
//   - a symlink that points outside the source directory, or to nothing, is an error naming it.
//
// Sockets, devices and named pipes are errors too.
//
// Layers are assembled in memory, which suits test fixtures and demo catalogs; a catalog of
// hundreds of megabytes needs that much memory (twice, compressed and not) while it is built.
package imagebuild
