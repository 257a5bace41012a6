package provisioner

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// newMapper discovers the API server's kinds afresh (the client's mapper caches what it saw first).
func newMapper() (meta.RESTMapper, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return apiutil.NewDynamicRESTMapper(cfg, hc)
}

func parseGK(apiVersion, kind string) (schema.GroupKind, string) {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version
}
