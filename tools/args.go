package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/message"
)

// argSchema checks a call's arguments against its tool's input schema: the
// one place where every tool's input is validated, before the call takes a
// ticket's turn or a lock. Keys are matched exactly, as JSON Schema does
// (Go's encoding/json would fold their case), an unknown key is an error
// that lists the valid ones, and 1.0 is an integer.
type argSchema struct {
	tool   string
	schema *jsonschema.Schema
	keys   []string // the properties, sorted
}

// newArgSchema compiles the input schema of def.
func newArgSchema(def mcp.Tool) (*argSchema, error) {
	raw := def.RawInputSchema
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(def.InputSchema); err != nil {
			return nil, err
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", def.Name, err)
	}
	url := "mem:///tools/" + def.Name + ".json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", def.Name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", def.Name, err)
	}
	var props struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(raw, &props)
	a := &argSchema{tool: def.Name, schema: sch}
	for k := range props.Properties {
		a.keys = append(a.keys, k)
	}
	slices.Sort(a.keys)
	return a, nil
}

// check validates the arguments of a call and returns them as a JSON object
// with integral numbers written as integers, ready to decode into the
// tool's argument struct, and the pageId they name (0 for none); or an
// *argError that says what to fix.
func (a *argSchema) check(req mcp.CallToolRequest) (args []byte, pageID int, err error) {
	raw, err := rawArguments(req)
	if err != nil {
		return nil, 0, &argError{fmt.Sprintf("invalid arguments for %s: %v", a.tool, err)}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, 0, &argError{fmt.Sprintf("invalid arguments for %s: not JSON: %v", a.tool, err)}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, 0, &argError{fmt.Sprintf("invalid arguments for %s: want a JSON object of named arguments", a.tool)}
	}
	for k, e := range obj {
		if e == nil {
			delete(obj, k) // an explicit null is an argument left out
		}
	}
	if err := a.schema.Validate(v); err != nil {
		var verr *jsonschema.ValidationError
		if !errors.As(err, &verr) {
			return nil, 0, &argError{fmt.Sprintf("invalid arguments for %s: %v", a.tool, err)}
		}
		return nil, 0, &argError{a.explain(verr)}
	}
	integral(obj)
	if pageID, err = pageIDOf(obj); err != nil {
		return nil, 0, err
	}
	args, err = json.Marshal(obj)
	return args, pageID, err
}

// pageIDOf reads the optional pageId of arguments the schema checked and
// integral made an int64, if there; 0 means none.
func pageIDOf(args map[string]any) (int, error) {
	v, ok := args["pageId"]
	if !ok {
		return 0, nil
	}
	if id, ok := v.(int64); ok && id >= 1 && id <= math.MaxInt32 {
		return int(id), nil
	}
	return 0, &argError{fmt.Sprintf("invalid pageId %v: want a page id from list_pages", v)}
}

// rawArguments returns the arguments as the client sent them; none is {}.
func rawArguments(req mcp.CallToolRequest) ([]byte, error) {
	switch args := req.Params.Arguments.(type) {
	case nil:
		return []byte("{}"), nil
	case json.RawMessage:
		if len(bytes.TrimSpace(args)) == 0 {
			return []byte("{}"), nil
		}
		return args, nil
	default:
		return json.Marshal(args)
	}
}

// integral turns the json.Numbers that jsonschema decoding gives into plain
// values encoding/json can put into Go ints: 1.0 becomes 1.
func integral(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = integral(e)
		}
	case []any:
		for i, e := range v {
			v[i] = integral(e)
		}
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		if f, err := v.Float64(); err == nil {
			if f == float64(int64(f)) {
				return int64(f)
			}
			return f
		}
	}
	return v
}

var printer = message.NewPrinter(message.MatchLanguage("en"))

// explain turns a validation error into one message an agent can act on,
// naming each argument at fault.
func (a *argSchema) explain(verr *jsonschema.ValidationError) string {
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		parts = append(parts, a.leaf(e))
	}
	walk(verr)
	slices.Sort(parts)
	parts = slices.Compact(parts)
	return strings.Join(parts, "; ")
}

// leaf explains one violated constraint.
func (a *argSchema) leaf(e *jsonschema.ValidationError) string {
	where := location(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		if where != "" {
			return fmt.Sprintf("unrecognized key %s in argument %q of %s", quoteAll(k.Properties), where, a.tool)
		}
		return fmt.Sprintf("unrecognized argument %s for %s; valid arguments are %s (names are case-sensitive)",
			quoteAll(k.Properties), a.tool, a.validKeys())
	case *kind.Required:
		if where != "" {
			return fmt.Sprintf("missing key %s in argument %q of %s", quoteAll(k.Missing), where, a.tool)
		}
		return fmt.Sprintf("missing required argument %s for %s; see the tool's input schema", quoteAll(k.Missing), a.tool)
	case *kind.Type:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = article(w)
		}
		if where != "" {
			return fmt.Sprintf("invalid argument %q for %s: want %s, got %s", where, a.tool, strings.Join(want, " or "), k.Got)
		}
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = compactJSON(w)
		}
		if where != "" {
			return fmt.Sprintf("invalid argument %q for %s: want one of %s, got %s", where, a.tool, strings.Join(want, ", "), compactJSON(k.Got))
		}
	case *kind.Minimum:
		return fmt.Sprintf("invalid argument %q for %s: want at least %s, got %s", where, a.tool, ratString(k.Want), ratString(k.Got))
	case *kind.Maximum:
		return fmt.Sprintf("invalid argument %q for %s: want at most %s, got %s", where, a.tool, ratString(k.Want), ratString(k.Got))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("invalid argument %q for %s: want more than %s, got %s", where, a.tool, ratString(k.Want), ratString(k.Got))
	case *kind.MinItems:
		return fmt.Sprintf("invalid argument %q for %s: want at least %d item(s), got %d", where, a.tool, k.Want, k.Got)
	}
	if where == "" {
		return fmt.Sprintf("invalid arguments for %s: %s", a.tool, e.ErrorKind.LocalizedString(printer))
	}
	return fmt.Sprintf("invalid argument %q for %s: %s", where, a.tool, e.ErrorKind.LocalizedString(printer))
}

// validKeys lists the tool's arguments for an error.
func (a *argSchema) validKeys() string {
	if len(a.keys) == 0 {
		return "none"
	}
	return strings.Join(a.keys, ", ")
}

// article names a JSON type with its article: "a string", "an integer".
func article(t string) string {
	if strings.ContainsAny(t[:1], "aeiou") {
		return "an " + t
	}
	return "a " + t
}

// compactJSON shows a value as JSON, cut short.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return capText(string(b), 100)
}

// location writes where in the arguments a value is, as an agent would:
// elements[0].uid.
func location(path []string) string {
	var b strings.Builder
	for _, seg := range path {
		if seg != "" && strings.Trim(seg, "0123456789") == "" {
			b.WriteString("[" + seg + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

// ratString writes a schema bound or a value as a person would: 1, 0.5.
func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	return strings.TrimRight(r.FloatString(6), "0")
}
