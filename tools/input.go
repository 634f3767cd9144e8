package tools

import (
	"context"
	"fmt"

	"github.com/pagemux/pagemux/browser"
)

func (s *Server) inputTools() []tool {
	return []tool{
		s.click(),
		s.hover(),
		s.fill(),
		s.typeText(),
		s.pressKey(),
		s.handleDialog(),
	}
}

type uidArgs struct {
	pageArg
	UID             string `json:"uid" jsonschema:"The uid of an element on the page from the page content snapshot"`
	IncludeSnapshot bool   `json:"includeSnapshot,omitempty" jsonschema:"Whether to include a snapshot in the response. Default is false."`
}

type clickArgs struct {
	uidArgs
	DblClick bool `json:"dblClick,omitempty" jsonschema:"Set to true for double clicks. Default is false."`
}

// acted finishes an action: a dialog it opened is a success, said with
// opened (such as "The element was clicked and it opened a dialog."), after
// which the result shows the dialog; any other error fails the call.
func acted(c *call, err error, snapshot bool, opened, done string) error {
	c.resp.reportNavigation = true
	switch {
	case isDialog(err):
		c.resp.say("%s", opened)
		return nil
	case err != nil:
		return err
	}
	c.resp.say("%s", done)
	if snapshot {
		c.resp.includeSnapshot(false)
	}
	return nil
}

func (s *Server) click() tool {
	return newTool("click", "Clicks on the provided element", pageScope,
		func(ctx context.Context, c *call, a *clickArgs) error {
			err := c.page.Input().Click(ctx, a.UID, a.DblClick)
			if a.DblClick {
				return acted(c, err, a.IncludeSnapshot, "The element was double clicked and it opened a dialog.", "Successfully double clicked on the element")
			}
			return acted(c, err, a.IncludeSnapshot, "The element was clicked and it opened a dialog.", "Successfully clicked on the element")
		})
}

func (s *Server) hover() tool {
	return newTool("hover", "Hover over the provided element", pageScope,
		func(ctx context.Context, c *call, a *uidArgs) error {
			return acted(c, c.page.Input().Hover(ctx, a.UID), a.IncludeSnapshot, "The element was hovered and it opened a dialog.", "Successfully hovered over the element")
		})
}

type fillArgs struct {
	uidArgs
	Value string `json:"value" jsonschema:"The value to fill in"`
}

func (s *Server) fill() tool {
	return newTool("fill", "Type text into a input, text area or select an option from a <select> element.", pageScope,
		func(ctx context.Context, c *call, a *fillArgs) error {
			return acted(c, c.page.Input().Fill(ctx, a.UID, a.Value), a.IncludeSnapshot, "The element was filled out and it opened a dialog.", "Successfully filled out the element")
		})
}

type typeTextArgs struct {
	pageArg
	Text      string `json:"text" jsonschema:"The text to type"`
	SubmitKey string `json:"submitKey,omitempty" jsonschema:"Optional key to press after typing. E.g., \"Enter\", \"Tab\", \"Escape\""`
}

func (s *Server) typeText() tool {
	return newTool("type_text", "Type text using keyboard into a previously focused input", pageScope,
		func(ctx context.Context, c *call, a *typeTextArgs) error {
			var submit *browser.Key
			if a.SubmitKey != "" {
				k, err := browser.ParseKey(a.SubmitKey)
				if err != nil {
					return &argError{err.Error()}
				}
				submit = &k
			}
			typed := a.Text
			if submit != nil {
				typed += " + " + a.SubmitKey
			}
			msg := fmt.Sprintf("Typed text %q", typed)
			how, err := c.page.Input().TypeText(ctx, a.Text, submit)
			if err := acted(c, err, false, msg+" and it opened a dialog.", msg); err != nil || a.Text == "" {
				return err
			}
			if how.Keys {
				c.resp.say("Typed key by key: %s.", how.Why)
			} else {
				c.resp.say("Inserted the text in one step: nothing listens for key events on the focused field.")
			}
			return nil
		})
}

type pressKeyArgs struct {
	pageArg
	Key             string `json:"key" jsonschema:"A key or a combination (e.g., \"Enter\", \"Control+A\", \"Control++\", \"Control+Shift+R\"). Modifiers: Control, Shift, Alt, Meta"`
	IncludeSnapshot bool   `json:"includeSnapshot,omitempty" jsonschema:"Whether to include a snapshot in the response. Default is false."`
}

func (s *Server) pressKey() tool {
	return newTool("press_key", "Press a key or key combination. Use this when other input methods like fill() cannot be used (e.g., keyboard shortcuts, navigation keys, or special key combinations).", pageScope,
		func(ctx context.Context, c *call, a *pressKeyArgs) error {
			k, err := browser.ParseKey(a.Key)
			if err != nil {
				return &argError{err.Error()}
			}
			msg := "Successfully pressed key: " + a.Key
			return acted(c, c.page.Input().PressKey(ctx, k), a.IncludeSnapshot, msg+". It opened a dialog.", msg)
		})
}

type dialogArgs struct {
	pageArg
	Action     string `json:"action" jsonschema:"Whether to dismiss or accept the dialog"`
	PromptText string `json:"promptText,omitempty" jsonschema:"Optional prompt text to enter into the dialog."`
}

func (s *Server) handleDialog() tool {
	t := newTool("handle_dialog", "If a browser dialog was opened, use this command to handle it", pageScope,
		func(ctx context.Context, c *call, a *dialogArgs) error {
			var accept bool
			switch a.Action {
			case "accept":
				accept = true
			case "dismiss":
			default:
				return &argError{fmt.Sprintf("invalid action %q: want accept or dismiss", a.Action)}
			}
			_, err := c.page.HandleDialog(ctx, accept, a.PromptText)
			if err != nil && !isDialog(err) {
				return err
			}
			if accept {
				c.resp.say("Successfully accepted the dialog")
			} else {
				c.resp.say("Successfully dismissed the dialog")
			}
			c.resp.includePages()
			return nil
		})
	t.answersDialogs = true
	return t
}
