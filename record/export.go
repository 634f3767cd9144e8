package record

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// SmokeStep is one step of a `pagemux smoke --steps` file (smoke/steps.go):
// exactly one of its kinds is set, and Value with Fill.
type SmokeStep struct {
	Navigate   string  `json:"navigate,omitempty"`
	Click      string  `json:"click,omitempty"`
	Fill       string  `json:"fill,omitempty"`
	Value      *string `json:"value,omitempty"`
	Press      string  `json:"press,omitempty"`
	WaitForURL string  `json:"waitForURL,omitempty"`
}

// secretRef matches a secret's name in a value, ${NAME}, as the agent
// typed it; smoke reads it from the environment as the same ${NAME}.
var secretRef = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

// Export turns the navigations, clicks, fills and key presses of rec that
// succeeded into smoke steps, in order; a click that took its page to
// another URL is followed by a waitForURL for it. Skipped says, for each
// action it could not turn into a step, which and why (a click by a uid it
// found no selector for, a hover: smoke has no such step). It doesn't keep
// pages apart: the steps of a record of several tabs run in one.
func Export(rec *Record) (steps []SmokeStep, skipped []string) {
	urls := map[int]string{} // each page's URL after its last step
	for _, s := range rec.Steps {
		if s.Stopped != "" || s.Outcome != "ok" {
			continue
		}
		before := urls[s.Page]
		if s.URL != "" {
			urls[s.Page] = s.URL
		}
		got, why := exportStep(s)
		if why != "" {
			skipped = append(skipped, fmt.Sprintf("step %d (%s): %s", s.N, s.Tool, why))
			continue
		}
		steps = append(steps, got...)
		if (s.Tool == "click" || s.Tool == "press_key") && before != "" && s.URL != "" && s.URL != before {
			steps = append(steps, SmokeStep{WaitForURL: s.URL})
		}
	}
	return steps, skipped
}

// exportStep is the smoke steps of one step, or why there are none ("" and
// no steps for a call that is no action, such as a snapshot).
func exportStep(s Step) ([]SmokeStep, string) {
	var a struct {
		Type     string `json:"type"`
		URL      string `json:"url"`
		Value    string `json:"value"`
		Key      string `json:"key"`
		Elements []struct {
			Value string `json:"value"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(s.Args, &a); err != nil && len(s.Args) > 0 {
		return nil, "its arguments do not read: " + err.Error()
	}
	switch s.Tool {
	case "navigate_page", "new_page":
		target := a.URL
		if a.Type != "" && a.Type != "url" {
			target = s.URL // back, forward, reload: where it went
		}
		if target == "" {
			return nil, "no URL to navigate to"
		}
		return []SmokeStep{{Navigate: target}}, ""
	case "click":
		sel := first(s.Selectors)
		if sel == "" {
			return nil, "no CSS selector was found for its element (in a frame, or gone before it was clicked)"
		}
		return []SmokeStep{{Click: sel}}, ""
	case "fill":
		return fillStep(first(s.Selectors), a.Value)
	case "fill_form":
		var out []SmokeStep
		for i, e := range a.Elements {
			sel := ""
			if i < len(s.Selectors) {
				sel = s.Selectors[i]
			}
			st, why := fillStep(sel, e.Value)
			if why != "" {
				return nil, fmt.Sprintf("element %d: %s", i+1, why)
			}
			out = append(out, st...)
		}
		return out, ""
	case "press_key":
		return []SmokeStep{{Press: a.Key}}, ""
	case "hover", "drag", "type_text", "upload_file", "handle_dialog":
		return nil, "a steps file has no step for " + s.Tool
	}
	return nil, ""
}

// fillStep is a fill of sel with value, its secrets' names kept: smoke
// takes ${NAME} from the environment.
func fillStep(sel, value string) ([]SmokeStep, string) {
	if sel == "" {
		return nil, "no CSS selector was found for its element (in a frame?)"
	}
	if strings.Contains(secretRef.ReplaceAllString(value, ""), "$") {
		return nil, "its value has a $ that is no secret's ${NAME}, which a steps file would read as an environment variable"
	}
	return []SmokeStep{{Fill: sel, Value: &value}}, ""
}

// first is ss's first, "" for none.
func first(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return ss[0]
}
