package serve

import _ "embed"

// openAPIDoc is the OpenAPI 3 description of the service, served at
// /openapi.json. Tests check it against the registered routes and the
// statuses the handlers actually return.
//
//go:embed openapi.json
var openAPIDoc []byte

// OpenAPI returns the OpenAPI 3 document (JSON).
func OpenAPI() []byte { return append([]byte(nil), openAPIDoc...) }
