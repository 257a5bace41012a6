// Command olmv1-images builds the container images of catalogd, rukpak and operator-controller from
// the static binaries in bin/ without Docker (go-containerregistry), and pushes them or writes them as
// archives for `kind load image-archive`:
//
//	olmv1-images build [--bin-dir bin] [--out bin/images] [--registry R] [--tag T] [--only NAME [--ref REF]]
//	olmv1-images push  [--bin-dir bin] --registry R [--tag T] [--insecure] [--only NAME]
//
// --only NAME --ref REF builds one image tagged REF (Tilt's custom_build passes $EXPECTED_REF).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/olmv1/olmv1/e2e/chart/images"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "olmv1-images:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || (args[0] != "build" && args[0] != "push") {
		return fmt.Errorf("usage: olmv1-images build|push [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	binDir := fs.String("bin-dir", "bin", "directory with the static catalogd, rukpak and operator-controller binaries")
	out := fs.String("out", "bin/images", "build: directory for the <name>.tar archives")
	registry := fs.String("registry", "localhost/olmv1", "registry and path prefix, e.g. 127.0.0.1:5000/olmv1 or quay.io/me")
	tag := fs.String("tag", "dev", "image tag")
	only := fs.String("only", "", "build or push only this controller")
	ref := fs.String("ref", "", "with --only: the full reference to tag (build) or push to, instead of <registry>/<name>:<tag>")
	insecure := fs.Bool("insecure", false, "push: plain HTTP (loopback registries get plain HTTP anyway)")
	caBundle := fs.String("ca-bundle", images.DefaultCABundle(), "PEM CA bundle copied into the images (for pulling over HTTPS); empty for none")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	names := images.Names
	if *only != "" {
		if !slices.Contains(images.Names, *only) {
			return fmt.Errorf("--only %q: want one of %v", *only, images.Names)
		}
		names = []string{*only}
	} else if *ref != "" {
		return fmt.Errorf("--ref needs --only")
	}
	refs := map[string]string{}
	imgs := map[string]v1.Image{}
	for _, n := range names {
		img, err := images.Build(n, filepath.Join(*binDir, n), images.Options{CABundle: *caBundle})
		if err != nil {
			return err
		}
		imgs[n], refs[n] = img, images.Ref(*registry, n, *tag)
		if *ref != "" {
			refs[n] = *ref
		}
	}
	ctx := context.Background()
	for _, n := range names {
		d, err := imgs[n].Digest()
		if err != nil {
			return err
		}
		if args[0] == "push" {
			pushed, err := images.Push(ctx, imgs[n], refs[n], *insecure)
			if err != nil {
				return err
			}
			fmt.Println(pushed.String())
			continue
		}
		p := filepath.Join(*out, n+".tar")
		if err := images.WriteArchive(imgs[n], refs[n], p); err != nil {
			return err
		}
		fmt.Printf("%s\t%s\t%s\n", refs[n], d, p)
	}
	return nil
}
