package preview

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readOnlyClient is the client of a preview (install --dry-run, upgrade --preview): reads pass
// through; a write reaches the API server only as a dry run (DryRun: All, which the server
// validates, defaults and answers without storing anything), and any other write is refused before
// it is sent. So a preview cannot change the cluster, whatever path its code takes.
type readOnlyClient struct {
	client.Client
}

// errNotDryRun is returned for a write that is not a dry run.
func errNotDryRun(verb string, obj any) error {
	return fmt.Errorf("kubectl olmv1: refusing to %s %T during a preview: only dry-run requests may be sent (this is a bug)", verb, obj)
}

func isDryRun(dryRun []string) bool { return slices.Contains(dryRun, metav1.DryRunAll) }

func (c readOnlyClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	o := &client.CreateOptions{}
	if o.ApplyOptions(opts); !isDryRun(o.DryRun) {
		return errNotDryRun("create", obj)
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c readOnlyClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	o := &client.UpdateOptions{}
	if o.ApplyOptions(opts); !isDryRun(o.DryRun) {
		return errNotDryRun("update", obj)
	}
	return c.Client.Update(ctx, obj, opts...)
}

func (c readOnlyClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	o := &client.PatchOptions{}
	if o.ApplyOptions(opts); !isDryRun(o.DryRun) {
		return errNotDryRun("patch", obj)
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c readOnlyClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	o := &client.ApplyOptions{}
	if o.ApplyOptions(opts); !isDryRun(o.DryRun) {
		return errNotDryRun("apply", obj)
	}
	return c.Client.Apply(ctx, obj, opts...)
}

func (c readOnlyClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	o := &client.DeleteOptions{}
	if o.ApplyOptions(opts); !isDryRun(o.DryRun) {
		return errNotDryRun("delete", obj)
	}
	return c.Client.Delete(ctx, obj, opts...)
}

func (c readOnlyClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	o := &client.DeleteAllOfOptions{}
	if o.ApplyOptions(opts); !isDryRun(o.DryRun) {
		return errNotDryRun("delete all of", obj)
	}
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

// Status and SubResource writes are never needed by a preview: all of them are refused.
func (c readOnlyClient) Status() client.SubResourceWriter { return refusingSubResource{} }

func (c readOnlyClient) SubResource(name string) client.SubResourceClient {
	return refusingSubResource{reader: c.Client.SubResource(name)}
}

type refusingSubResource struct{ reader client.SubResourceReader }

func (r refusingSubResource) Get(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceGetOption) error {
	if r.reader == nil {
		return fmt.Errorf("kubectl olmv1: no subresource to read")
	}
	return r.reader.Get(ctx, obj, sub, opts...)
}

func (refusingSubResource) Create(_ context.Context, obj, _ client.Object, _ ...client.SubResourceCreateOption) error {
	return errNotDryRun("create a subresource of", obj)
}

func (refusingSubResource) Update(_ context.Context, obj client.Object, _ ...client.SubResourceUpdateOption) error {
	return errNotDryRun("update a subresource of", obj)
}

func (refusingSubResource) Patch(_ context.Context, obj client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
	return errNotDryRun("patch a subresource of", obj)
}

func (refusingSubResource) Apply(_ context.Context, obj runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
	return errNotDryRun("apply a subresource of", obj)
}
