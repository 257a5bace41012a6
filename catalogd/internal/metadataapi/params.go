package metadataapi

import (
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
)

// integerParams are the query parameters of list and watch that k8s.io/apiserver decodes as
// integers. It answers a value that does not parse with the parser's words alone
// (`strconv.ParseInt: parsing "ten": invalid syntax`); withIntegerParams answers first, naming the
// parameter and what it takes.
var integerParams = map[string]string{
	"limit":          "the page size, an integer up to 9223372036854775807 (0 or none: no limit)",
	"timeoutSeconds": "a number of seconds, an integer up to 9223372036854775807",
}

// withIntegerParams answers 400 Bad Request to a request whose integer query parameters do not
// parse; other requests go to next unchanged.
func withIntegerParams(next http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		query := req.URL.Query()
		for param, want := range integerParams {
			values, ok := query[param]
			if !ok || len(values) == 0 {
				continue
			}
			if _, err := strconv.ParseInt(values[0], 10, 64); err != nil {
				msg := fmt.Sprintf("invalid %s %q: want %s", param, values[0], want)
				responsewriters.ErrorNegotiated(apierrors.NewBadRequest(msg), s, metav1.SchemeGroupVersion, w, req)
				return
			}
		}
		next.ServeHTTP(w, req)
	})
}
