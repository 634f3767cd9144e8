package rules

import _ "embed"

// Schema is the JSON Schema (draft 2020-12) of a rules file, File as Parse
// reads it, for editors and linters; TestSchema keeps the two in step.
// Parse does not use it, and checks more than it can say: that rule names
// are unique, that an element's regexp compiles.
//
//go:embed schema.json
var Schema []byte
