package lighthouse

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MaxNodes is how many flagged DOM nodes a failed audit lists; the saved
// reports have them all.
const MaxNodes = 10

// Report is what an agent needs of a Lighthouse result (the LHR): scores,
// counts, and the failed audits with the nodes they flag. Lists keep the
// LHR's order, which is Lighthouse's config order.
type Report struct {
	// URL is the page's URL when the audit ended (finalDisplayedUrl).
	URL string
	// GatherMode is "navigation" or "snapshot"; FormFactor "desktop" or
	// "mobile".
	GatherMode, FormFactor string
	Categories             []Category
	// Passed counts the audits that scored 1.
	Passed int
	// Failed are the audits that scored below 1; audits without a score
	// (informative, manual, not applicable) are neither.
	Failed []Audit
	// TotalMS is how long Lighthouse took, in milliseconds.
	TotalMS float64
	// RuntimeError is set when Lighthouse could not audit the page, such as
	// NO_FCP for a page that never painted; the scores are then missing.
	RuntimeError *RuntimeError
	// Audits are every audit's result, by id, details kept raw: for
	// judging one audit (pagemux smoke's --lighthouse-audit) or reading
	// its figures (budgets).
	Audits map[string]AuditResult
}

// AuditResult is one audit as the report gives it.
type AuditResult struct {
	Title string
	// Score is 0 to 1; nil when the audit has none (ScoreDisplayMode:
	// "notApplicable", "informative", "manual", "error").
	Score                          *float64
	ScoreDisplayMode, DisplayValue string
	Details                        json.RawMessage
}

// Category is one category's score.
type Category struct {
	ID, Title string
	// Score is 0 to 1; nil when Lighthouse could not score the category.
	Score *float64
}

// Audit is one failed audit.
type Audit struct {
	ID, Title, Description, DisplayValue string
	Score                                float64
	// Categories are the ids of the categories the audit counts in.
	Categories []string
	// Nodes are the first MaxNodes of the TotalNodes DOM nodes it flags.
	Nodes      []Node
	TotalNodes int
}

// Node is a DOM node an audit flags.
type Node struct {
	Selector, Snippet, NodeLabel, Explanation string
}

// RuntimeError is Lighthouse's reason for not auditing a page.
type RuntimeError struct {
	Code, Message string
}

// lhr is the part of Lighthouse's result that Report reads.
type lhr struct {
	FinalDisplayedURL string          `json:"finalDisplayedUrl"`
	GatherMode        string          `json:"gatherMode"`
	Categories        json.RawMessage `json:"categories"`
	Audits            json.RawMessage `json:"audits"`
	ConfigSettings    struct {
		FormFactor string `json:"formFactor"`
	} `json:"configSettings"`
	Timing struct {
		Total float64 `json:"total"`
	} `json:"timing"`
	RuntimeError *RuntimeError `json:"runtimeError"`
}

type lhrCategory struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Score     *float64 `json:"score"`
	AuditRefs []struct {
		ID string `json:"id"`
	} `json:"auditRefs"`
}

type lhrAudit struct {
	ID               string          `json:"id"`
	Title            string          `json:"title"`
	Description      string          `json:"description"`
	Score            *float64        `json:"score"`
	ScoreDisplayMode string          `json:"scoreDisplayMode"`
	DisplayValue     string          `json:"displayValue"`
	Details          json.RawMessage `json:"details"`
}

// ParseReport reads a Lighthouse JSON report. It does not check the
// Lighthouse version that wrote it.
func ParseReport(data []byte) (*Report, error) {
	var l lhr
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("parse the lighthouse report: %w", err)
	}
	r := &Report{URL: l.FinalDisplayedURL, GatherMode: l.GatherMode, FormFactor: l.ConfigSettings.FormFactor,
		TotalMS: l.Timing.Total, RuntimeError: l.RuntimeError}
	cats, err := members(l.Categories)
	if err != nil {
		return nil, fmt.Errorf("parse the lighthouse report's categories: %w", err)
	}
	inCategories := map[string][]string{}
	for _, m := range cats {
		var c lhrCategory
		if err := json.Unmarshal(m.value, &c); err != nil {
			return nil, fmt.Errorf("parse lighthouse category %s: %w", m.key, err)
		}
		r.Categories = append(r.Categories, Category{ID: c.ID, Title: c.Title, Score: c.Score})
		for _, ref := range c.AuditRefs {
			inCategories[ref.ID] = append(inCategories[ref.ID], c.ID)
		}
	}
	audits, err := members(l.Audits)
	if err != nil {
		return nil, fmt.Errorf("parse the lighthouse report's audits: %w", err)
	}
	r.Audits = make(map[string]AuditResult, len(audits))
	for _, m := range audits {
		var a lhrAudit
		if err := json.Unmarshal(m.value, &a); err != nil {
			return nil, fmt.Errorf("parse lighthouse audit %s: %w", m.key, err)
		}
		r.Audits[m.key] = AuditResult{Title: a.Title, Score: a.Score, ScoreDisplayMode: a.ScoreDisplayMode, DisplayValue: a.DisplayValue, Details: a.Details}
		switch {
		case a.Score == nil:
		case *a.Score >= 1:
			r.Passed++
		default:
			nodes := &nodeSet{byKey: map[string]int{}}
			nodes.collect(a.Details)
			f := Audit{ID: a.ID, Title: a.Title, Description: a.Description, DisplayValue: a.DisplayValue,
				Score: *a.Score, Categories: inCategories[a.ID], TotalNodes: len(nodes.list)}
			f.Nodes = nodes.list[:min(len(nodes.list), MaxNodes)]
			r.Failed = append(r.Failed, f)
		}
	}
	return r, nil
}

// nodeSet gathers the distinct nodes of an audit's details, in the order
// first seen.
type nodeSet struct {
	list  []Node
	byKey map[string]int
}

// collect walks details of any shape (tables, lists of tables) for values of
// type "node". It skips debug data and sub-items: for axe audits those hold
// related context, such as the background of a color-contrast failure, not
// failing elements.
func (s *nodeSet) collect(raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return
	}
	switch raw[0] {
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) == nil {
			for _, it := range items {
				s.collect(it)
			}
		}
	case '{':
		ms, err := members(raw)
		if err != nil {
			return
		}
		var v struct {
			Type        string `json:"type"`
			LHID        string `json:"lhId"`
			Path        string `json:"path"`
			Selector    string `json:"selector"`
			Snippet     string `json:"snippet"`
			NodeLabel   string `json:"nodeLabel"`
			Explanation string `json:"explanation"`
		}
		_ = json.Unmarshal(raw, &v) // fields of other types stay empty
		switch v.Type {
		case "debugdata", "subitems":
			return
		case "node":
			s.add(nodeKey(v.LHID, v.Path, v.Selector, v.Snippet, len(s.list)),
				Node{Selector: v.Selector, Snippet: v.Snippet, NodeLabel: v.NodeLabel, Explanation: v.Explanation})
			return
		}
		for _, m := range ms {
			if m.key != "subItems" {
				s.collect(m.value)
			}
		}
	}
}

// nodeKey says which flagged nodes are the same node: by Lighthouse's id or
// DOM path, else by selector and snippet; a node with none of them is one of
// its own.
func nodeKey(lhID, path, selector, snippet string, n int) string {
	switch {
	case lhID != "":
		return "id:" + lhID
	case path != "":
		return "id:" + path
	case selector != "" || snippet != "":
		return "selector:" + selector + "|" + snippet
	}
	return fmt.Sprintf("unidentified:%d", n)
}

// add records a node, or fills in the fields an earlier sight of it lacked.
func (s *nodeSet) add(key string, n Node) {
	i, ok := s.byKey[key]
	if !ok {
		s.byKey[key] = len(s.list)
		s.list = append(s.list, n)
		return
	}
	have := &s.list[i]
	for _, f := range []struct {
		dst *string
		src string
	}{
		{&have.Selector, n.Selector}, {&have.Snippet, n.Snippet}, {&have.NodeLabel, n.NodeLabel}, {&have.Explanation, n.Explanation},
	} {
		if *f.dst == "" {
			*f.dst = f.src
		}
	}
}

// member is one key and value of a JSON object.
type member struct {
	key   string
	value json.RawMessage
}

// members returns the members of a JSON object in their order, which a Go
// map would lose. Null or empty input has none.
func members(raw json.RawMessage) ([]member, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object, got %.40s", raw)
	}
	var ms []member
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		ms = append(ms, member{key, v})
	}
	return ms, nil
}
