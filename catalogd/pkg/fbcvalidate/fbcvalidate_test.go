package fbcvalidate

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/olmv1/olmv1/catalogd/internal/fbc"
)

const valid = `schema: olm.package
name: p
defaultChannel: stable
---
schema: olm.channel
package: p
name: stable
entries:
- name: p.v1.0.0
---
schema: olm.bundle
package: p
name: p.v1.0.0
image: registry.test/p:1.0.0
properties:
- type: olm.package
  value: {packageName: p, version: 1.0.0}
`

// TestValidateIsCatalogdsLoad: the result and the errors are those of catalogd's own loader.
func TestValidateIsCatalogdsLoad(t *testing.T) {
	ctx := context.Background()
	root := fstest.MapFS{"p/catalog.yaml": {Data: []byte(valid)}}
	res, err := Validate(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	c, err := fbc.Load(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if res.Hash != c.Hash || res.Packages != 1 || res.Channels != 1 || res.Bundles != 1 || res.Blobs != 3 {
		t.Fatalf("result %+v, catalogd hash %s", res, c.Hash)
	}

	bad := fstest.MapFS{"p/catalog.yaml": {Data: []byte(strings.Replace(valid, "- name: p.v1.0.0", "- name: p.v1.0.0\n- name: p.v2.0.0", 1))}}
	_, err = Validate(ctx, bad)
	_, want := fbc.Load(ctx, bad)
	if err == nil || want == nil || err.Error() != want.Error() || !IsInvalid(err) {
		t.Fatalf("err = %v, want catalogd's %v (invalid)", err, want)
	}
}
