package provisioner

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type plainRenderer struct{}

func (plainRenderer) Render(context.Context, Request) ([]client.Object, error) {
	return []client.Object{&corev1.ConfigMap{}}, nil
}

type describingRenderer struct{ plainRenderer }

func (describingRenderer) RenderDescribed(context.Context, Request) (Result, error) {
	return Result{Objects: []client.Object{&corev1.Secret{}}, Description: "install mode OwnNamespace"}, nil
}

func TestRenderDescribed(t *testing.T) {
	res, err := RenderDescribed(context.Background(), plainRenderer{}, Request{})
	if err != nil || len(res.Objects) != 1 || res.Description != "" {
		t.Errorf("a Renderer that is no Describer: %+v, %v; want its objects and no description", res, err)
	}
	res, err = RenderDescribed(context.Background(), describingRenderer{}, Request{})
	if _, ok := res.Objects[0].(*corev1.Secret); err != nil || !ok || res.Description != "install mode OwnNamespace" {
		t.Errorf("a Describer: %+v, %v; want RenderDescribed's result", res, err)
	}
}
