package metadataapi

import (
	"fmt"
	"net/url"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// integerParams are the query parameters of list and watch that are decoded as integers. The
// parameter decoder answers a value that does not parse with the parser's words alone
// (`strconv.ParseInt: parsing "ten": invalid syntax`); checkIntegerParams answers first, naming the
// parameter and what it takes.
var integerParams = map[string]string{
	"limit":          "the page size, an integer up to 9223372036854775807 (0 or none: no limit)",
	"timeoutSeconds": "a number of seconds, an integer up to 9223372036854775807",
}

// checkIntegerParams is 400 Bad Request for a query whose integer parameters do not parse.
func checkIntegerParams(query url.Values) error {
	for param, want := range integerParams {
		values, ok := query[param]
		if !ok || len(values) == 0 {
			continue
		}
		if _, err := strconv.ParseInt(values[0], 10, 64); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid %s %q: want %s", param, values[0], want))
		}
	}
	return nil
}
