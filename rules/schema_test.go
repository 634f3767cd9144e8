package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// compileSchema compiles Schema as an editor or linter would.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		t.Fatalf("schema.json is not JSON: %v", err)
	}
	const url = "mem:///rules/schema.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("schema.json does not compile: %v", err)
	}
	return sch
}

// asJSON reads a rules file, YAML or JSON, as the JSON value a schema
// validator sees.
func asJSON(t *testing.T, src []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: not a JSON value: %v", src, err)
	}
	j, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// rawSchema is Schema as plain JSON, for the tests that read its parts.
func rawSchema(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(Schema, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSchemaExamples: every rules file in docs/rules, and the example of
// rules_test.go, is valid by the schema and parses.
func TestSchemaExamples(t *testing.T) {
	t.Parallel()
	sch := compileSchema(t)
	paths, err := filepath.Glob(filepath.Join("..", "docs", "rules", "*"))
	if err != nil || len(paths) < 3 {
		t.Fatalf("docs/rules has %d files (%v), want the examples", len(paths), err)
	}
	files := map[string][]byte{"rules_test.go's example": []byte(example)}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = b
	}
	for name, b := range files {
		if err := sch.Validate(asJSON(t, b)); err != nil {
			t.Errorf("%s: the schema refuses it: %v", name, err)
		}
		s, err := Parse(name, b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if s.Count() == 0 {
			t.Errorf("%s has no rules", name)
		}
	}
}

// TestSchemaAgrees: the schema and Parse refuse the same bad files, and
// take the same good ones.
func TestSchemaAgrees(t *testing.T) {
	t.Parallel()
	sch := compileSchema(t)
	for _, c := range []struct {
		src string
		ok  bool
	}{
		{"agents: [{agent: a, colour: red}]", false},                        // unknown field
		{"rule: []", false},                                                 // unknown section
		{"holds: {tracing: 5m}", false},                                     // unknown hold
		{"once: [{name: x, when: {tool: [click]}}]", false},                 // unknown part of when
		{"agents: [{agent: a, tools: [clik]}]", false},                      // bad tool name
		{"agents: [{agent: a, deny: [read_only]}]", false},                  // bad group name
		{"once: [{name: x, when: {tools: [clik]}}]", false},                 // bad tool name in when
		{"agents: [{tools: [click]}]", false},                               // no agent
		{"agents: [null]", false},                                           // a null entry
		{"agents: [{agent: a, maxPages: -1}]", false},                       // negative bound
		{"agents: [{agent: a, urls: ['']}]", false},                         // empty URL pattern
		{"agents: [{agent: a, rate: {perSecond: 1, perMinute: 1}}]", false}, // both rates
		{"agents: [{agent: a, rate: {burst: 3}}]", false},                   // no rate
		{"agents: [{agent: a, rate: {perSecond: 1, wait: 2}}]", false},      // a duration without unit
		{"exclusive: [{name: e, resource: 'site:{sight}'}]", false},         // unknown variable
		{"exclusive: [{name: e, resource: 'site:{site'}]", false},           // { without }
		{"exclusive: [{name: e}]", false},                                   // no resource
		{"exclusive: [{resource: x}]", false},                               // no name
		{"exclusive: [{name: e, resource: x, lease: soon}]", false},         // bad duration
		{"once: [{name: x, when: {element: '/Pay/x'}}]", false},             // bad regexp flag
		{"once: [{name: x, when: {element: '/Pay'}}]", false},               // unclosed regexp
		{"require: [{name: r, when: {tools: [click]}}]", false},             // requires nothing
		{"require: [{name: r, at: []}]", false},                             // requires nothing
		{"require: [{name: r, inLastSnapshot: false}]", false},              // requires nothing

		{"# only comments", true},
		{`{"agents": [{"agent": "*", "deny": ["scripts"]}]}`, true},
		{"agents: [{agent: a, maxPages: 2, rate: {perSecond: 0, perMinute: 6}}]", true},
		{"agents: [{agent: a, rate: {perSecond: 0.5, wait: 1m30s}}]", true},
		{"exclusive: [{name: e, resource: 'account:{arg.email}/{query.cart}', lease: 0, timeout: 1.5s}]", true},
		{"once: [{name: x, key: '', ttl: 1h, when: {element: '/^pay/i', agents: ['*']}}]", true},
		{"once: [{name: x, when: {element: 'Place *'}}]", true},
		{"require: [{name: r, at: ['shop.example'], inLastSnapshot: false}]", true},
		{"holds: {trace: 2m, screencast: 0}", true},
	} {
		err := sch.Validate(asJSON(t, []byte(c.src)))
		if (err == nil) != c.ok {
			t.Errorf("%s: the schema says %v, want ok %v", c.src, err, c.ok)
		}
		_, err = Parse("rules.yaml", []byte(c.src))
		if (err == nil) != c.ok {
			t.Errorf("%s: Parse says %v, want ok %v", c.src, err, c.ok)
		}
	}
}

// TestSchemaCompiles: Schema is a draft 2020-12 schema that compiles.
func TestSchemaCompiles(t *testing.T) {
	t.Parallel()
	compileSchema(t)
	if d := rawSchema(t)["$schema"]; d != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema is %v, want draft 2020-12", d)
	}
}

// TestSchemaTools: the schema's tools and groups are AllTools and Groups.
func TestSchemaTools(t *testing.T) {
	t.Parallel()
	tool := rawSchema(t)["$defs"].(map[string]any)["tool"].(map[string]any)
	var enum []string
	for _, v := range tool["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	want := slices.Concat(AllTools, GroupNames())
	slices.Sort(enum)
	slices.Sort(want)
	if !slices.Equal(enum, want) {
		t.Errorf("schema.json's tool enum is\n%v\nwant AllTools and GroupNames():\n%v", enum, want)
	}
	if d := tool["description"].(string); !strings.Contains(d, "("+strings.Join(GroupNames(), ", ")+")") {
		t.Errorf("the tool's description names other groups than %v: %s", GroupNames(), d)
	}
}

// TestSchemaFields: each type of the file has, in the schema, exactly the
// properties its yaml tags name, each described, and no others allowed.
func TestSchemaFields(t *testing.T) {
	t.Parallel()
	root := rawSchema(t)
	defs := root["$defs"].(map[string]any)
	for typ, def := range map[reflect.Type]string{
		reflect.TypeFor[File]():      "",
		reflect.TypeFor[AgentRule](): "agentRule",
		reflect.TypeFor[Rate]():      "rate",
		reflect.TypeFor[Match]():     "match",
		reflect.TypeFor[Exclusive](): "exclusive",
		reflect.TypeFor[OnceRule]():  "once",
		reflect.TypeFor[Require]():   "require",
		reflect.TypeFor[Holds]():     "holds",
	} {
		obj := root
		if def != "" {
			obj = defs[def].(map[string]any)
		}
		var tags []string
		for f := range typ.Fields() {
			if tag, ok := f.Tag.Lookup("yaml"); ok && f.IsExported() {
				tags = append(tags, tag)
			}
		}
		props := obj["properties"].(map[string]any)
		names := slices.Sorted(maps.Keys(props))
		slices.Sort(tags)
		if !slices.Equal(names, tags) {
			t.Errorf("%s: the schema's properties are %v, the yaml tags %v", typ.Name(), names, tags)
		}
		if obj["additionalProperties"] != false {
			t.Errorf("%s: the schema allows other properties; the decoder does not (KnownFields)", typ.Name())
		}
		for name, p := range props {
			if d, _ := p.(map[string]any)["description"].(string); d == "" {
				t.Errorf("%s.%s has no description", typ.Name(), name)
			}
		}
	}
}

// TestSchemaTemplateVars: the template pattern names the variables
// parseTemplate takes.
func TestSchemaTemplateVars(t *testing.T) {
	t.Parallel()
	pattern := rawSchema(t)["$defs"].(map[string]any)["template"].(map[string]any)["pattern"].(string)
	m := regexp.MustCompile(`\(\?:((?:[a-z]+\|)+)arg`).FindStringSubmatch(pattern)
	if m == nil {
		t.Fatalf("no variables in the template pattern %s", pattern)
	}
	got := strings.Split(strings.TrimSuffix(m[1], "|"), "|")
	slices.Sort(got)
	if want := slices.Sorted(maps.Keys(templateVars)); !slices.Equal(got, want) {
		t.Errorf("the schema's template variables are %v, parseTemplate's %v", got, want)
	}
}

// TestRulesDoc: docs/RULES.md's table of groups is generated from Groups
// (PAGEMUX_UPDATE_SCHEMAS=1 writes it), and it names every field and
// template variable.
func TestRulesDoc(t *testing.T) {
	t.Parallel()
	const begin, end = "<!-- groups:begin (generated by go test ./rules/ with PAGEMUX_UPDATE_SCHEMAS=1) -->", "<!-- groups:end -->"
	path := filepath.Join("..", "docs", "RULES.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("RULES.md lacks the markers %q … %q", begin, end)
	}
	got := slices.Concat(doc[:i+len(begin)], []byte("\n"+groupTable()), doc[j:])
	if os.Getenv("PAGEMUX_UPDATE_SCHEMAS") != "" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got, doc) {
		t.Errorf("RULES.md's table of groups drifted from Groups; run PAGEMUX_UPDATE_SCHEMAS=1 go test ./rules/ -run TestRulesDoc and commit")
	}
	text := string(doc)
	schema := rawSchema(t)
	objects := []any{schema}
	for _, def := range schema["$defs"].(map[string]any) {
		objects = append(objects, def)
	}
	for _, o := range objects {
		props, _ := o.(map[string]any)["properties"].(map[string]any)
		for name := range props {
			if !strings.Contains(text, "`"+name+"`") {
				t.Errorf("RULES.md does not name the field `%s`", name)
			}
		}
	}
	shop, err := os.ReadFile(filepath.Join("..", "docs", "rules", "shop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "```yaml\n"+string(shop)+"```") {
		t.Error("RULES.md's first file is not docs/rules/shop.yaml as it is")
	}
	for v := range templateVars {
		if !strings.Contains(text, "`{"+v+"}`") {
			t.Errorf("RULES.md does not name the template variable `{%s}`", v)
		}
	}
}

// groupTable renders Groups as a Markdown table, and the arguments that
// put any call in files.
func groupTable() string {
	var b strings.Builder
	b.WriteString("| group | tools |\n|---|---|\n")
	for _, g := range GroupNames() {
		tools := "every tool"
		if g != "all" {
			tools = "`" + strings.Join(Groups[g], "`, `") + "`"
		}
		if g == "files" {
			tools += ", and any call that names a file of the host"
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", g, tools)
	}
	fmt.Fprintf(&b, "\nA call names a file of the host when it has one of the arguments `%s`.\n", strings.Join(fileArgs, "`, `"))
	return b.String()
}
