package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pagemux/pagemux/browser"
)

// consoleTools lists the console tools. Both read what the page's collector
// recorded from attach on, so an open dialog does not block them.
func (s *Server) consoleTools() []tool {
	list, get := s.listConsoleMessages(), s.getConsoleMessage()
	list.answersDialogs, get.answersDialogs = true, true
	return []tool{list, get}
}

// consoleTypes are the types list_console_messages filters by, as in
// chrome-devtools-mcp. Uncaught exceptions and unhandled rejections are
// "error"; "issue" are DevTools issues (browser/issues.go).
var consoleTypes = []string{"log", "debug", "info", "error", "warn", "dir", "dirxml", "table", "trace", "clear",
	"startGroup", "startGroupCollapsed", "endGroup", "assert", "profile", "profileEnd", "count", "timeEnd", "verbose", "issue"}

type listConsoleArgs struct {
	pageArg
	PageSize                 *int     `json:"pageSize,omitempty" jsonschema:"Maximum number of messages to return. When omitted, returns all messages."`
	PageIdx                  *int     `json:"pageIdx,omitempty" jsonschema:"Page number to return (0-based). When omitted, returns the first page."`
	Types                    []string `json:"types,omitempty" jsonschema:"Filter messages to only return messages of the specified resource types. When omitted or empty, returns all messages. Types: log, debug, info, error (also uncaught exceptions and unhandled promise rejections), warn, dir, dirxml, table, trace, clear, startGroup, startGroupCollapsed, endGroup, assert, profile, profileEnd, count, timeEnd, verbose, issue."`
	IncludePreservedMessages bool     `json:"includePreservedMessages,omitempty" jsonschema:"Set to true to return the preserved messages over the last 3 navigations."`
	IncludeStackTraces       bool     `json:"includeStackTraces,omitempty" jsonschema:"Set to true to include the stack trace for each message when available. Increases the response size."`
	ServiceWorkerID          string   `json:"serviceWorkerId,omitempty" jsonschema:"Filter messages to only return messages of the specified service worker."`
}

func (s *Server) listConsoleMessages() tool {
	return newTool("list_console_messages", "List all console messages for the target page since the last navigation.", pageScope,
		func(ctx context.Context, c *call, a *listConsoleArgs) error {
			// Attaches to a page met but not used yet: recording starts here.
			if err := c.page.Ready(ctx); err != nil {
				return err
			}
			if err := checkTypes("types", a.Types, consoleTypes); err != nil {
				return err
			}
			if err := checkPaging(a.PageSize, a.PageIdx); err != nil {
				return err
			}
			if a.ServiceWorkerID != "" {
				// Said rather than answered with an empty list, which would
				// read as "the worker logged nothing".
				return &argError{fmt.Sprintf("no service worker %q: pagemux collects the console messages of pages, not of service workers yet; omit serviceWorkerId to list page %d's messages", a.ServiceWorkerID, c.page.ID)}
			}
			list := messageList(c.page.Console(), a)
			c.resp.say("## Console messages")
			if list.Total == 0 {
				c.resp.say("<no console messages found>")
			} else {
				var lines []string
				list.Messages, lines = paginate(list.Messages, a.PageSize, a.PageIdx)
				c.resp.lines = append(c.resp.lines, lines...)
				stacks := false
				for _, m := range list.Messages {
					c.resp.say("%s", messageLine(m))
					if len(m.Stack) > 0 {
						stacks = true
						for _, l := range formatStack(m.Stack) {
							c.resp.say("  %s", l)
						}
					}
				}
				if stacks {
					c.resp.say("Note: stack trace line and column numbers use 1-based indexing")
				}
			}
			completenessNotes(c.resp, list.Completeness, "messages")
			c.resp.answer.Messages = list
			return nil
		})
}

// messageList is the page's console entries of the types a asks for (all
// when none), before paging.
func messageList(con *browser.Console, a *listConsoleArgs) *MessageList {
	msgs, info := con.List(a.IncludePreservedMessages)
	if len(a.Types) > 0 {
		msgs = slices.DeleteFunc(msgs, func(m *browser.ConsoleMessage) bool { return !slices.Contains(a.Types, m.Type) })
	}
	list := &MessageList{Messages: messageInfos(msgs, a.IncludeStackTraces), Completeness: Completeness(info)}
	if list.Messages == nil {
		list.Messages = []MessageInfo{}
	}
	list.Total = len(list.Messages)
	return list
}

// messageLine is an entry as the list shows it:
// msgid=3 [error] text (0 args) [2 times].
func messageLine(m MessageInfo) string {
	s := fmt.Sprintf("msgid=%d [%s] %s (%d args)", m.ID, m.Type, m.Text, m.Args)
	if m.Count > 1 {
		s += fmt.Sprintf(" [%d times]", m.Count)
	}
	return s
}

type getConsoleArgs struct {
	pageArg
	MsgID int `json:"msgid" jsonschema:"The msgid of a console message on the page from the listed console messages"`
}

func (s *Server) getConsoleMessage() tool {
	return newTool("get_console_message", "Gets a console message by its ID. You can get all messages by calling list_console_messages.", pageScope,
		func(ctx context.Context, c *call, a *getConsoleArgs) error {
			// Attaches to a page met but not used yet: recording starts here.
			if err := c.page.Ready(ctx); err != nil {
				return err
			}
			m, err := c.page.Console().Get(a.MsgID)
			if err != nil {
				return err
			}
			msg := consoleMessage(ctx, c.page, m)
			c.resp.say("ID: %d", msg.ID)
			c.resp.say("Message: %s> %s", msg.Type, msg.Text)
			if msg.Source != "" {
				c.resp.say("Source: %s", msg.Source)
			}
			if msg.URL != "" {
				c.resp.say("URL: %s", msg.URL)
			}
			if len(msg.Args) > 0 {
				c.resp.say("### Arguments")
				for i, v := range msg.Args {
					c.resp.say("Arg #%d: %s", i, v)
				}
			}
			if m.Stack != nil {
				c.resp.say("### Stack trace")
				c.resp.lines = append(c.resp.lines, formatStack(msg.Stack)...)
				c.resp.say("Note: line and column numbers use 1-based indexing")
			}
			c.resp.answer.Message = msg
			return nil
		})
}

// consoleMessage is m whole, its arguments read from the page while they
// live. URL is set only for a message without a stack, as the text shows it.
func consoleMessage(ctx context.Context, p *browser.Page, m *browser.ConsoleMessage) *ConsoleMessage {
	msg := &ConsoleMessage{ID: m.ID, Type: m.Type, Text: m.Text, Source: m.Source, Stack: stackFrames(m.Stack)}
	if m.Stack == nil {
		msg.URL = m.URL
	}
	if len(m.Args) > 0 {
		msg.Args = p.ConsoleArgs(ctx, m)
	}
	msg.Location = messageLocation(msg.Stack, msg.URL)
	return msg
}

// maxStackLines bounds a stack trace as shown.
const maxStackLines = 50

// formatStack renders a stack trace's frames, async parts under a
// "--- description ---" line.
func formatStack(frames []Frame) []string {
	var lines []string
	for _, f := range frames {
		if f.Async != "" {
			prefix := "--- " + f.Async + " "
			lines = append(lines, prefix+strings.Repeat("-", max(0, 40-len(prefix))))
		}
		line := "at " + f.Function
		if f.URL != "" {
			line += fmt.Sprintf(" (%s:%d:%d)", f.URL, f.Line, f.Column)
		}
		lines = append(lines, line)
	}
	if len(lines) > maxStackLines {
		lines = append(lines[:maxStackLines], fmt.Sprintf("... and %d more frames", len(lines)-maxStackLines))
	}
	return lines
}

// checkTypes refuses filter values outside the known ones.
func checkTypes(param string, got, valid []string) error {
	for _, v := range got {
		if !slices.Contains(valid, v) {
			return &argError{fmt.Sprintf("invalid %s value %q: want some of %s", param, v, strings.Join(valid, ", "))}
		}
	}
	return nil
}

// checkPaging refuses page sizes and indexes no list could have.
func checkPaging(size, idx *int) error {
	if size != nil && *size <= 0 {
		return &argError{fmt.Sprintf("invalid pageSize %d: want a positive number", *size)}
	}
	if idx != nil && *idx < 0 {
		return &argError{fmt.Sprintf("invalid pageIdx %d: want 0 or more", *idx)}
	}
	return nil
}

// defaultPageSize is the page size when only pageIdx is given.
const defaultPageSize = 20

// paginate cuts a non-empty list to the page asked for and returns the
// lines that say which part it shows, as chrome-devtools-mcp does: without
// pageSize and pageIdx, the whole list; a pageIdx past the end shows the
// first page with a note.
func paginate[T any](items []T, size, idx *int) ([]T, []string) {
	n := len(items)
	if size == nil && idx == nil {
		return items, []string{fmt.Sprintf("Showing 1-%d of %d (Page 1 of 1).", n, n)}
	}
	per := defaultPageSize
	if size != nil {
		per = *size
	}
	pages := max(1, (n+per-1)/per)
	var lines []string
	cur := 0
	if idx != nil {
		cur = *idx
	}
	if cur < 0 || cur >= pages {
		lines = append(lines, "Invalid page number provided. Showing first page.")
		cur = 0
	}
	start, end := cur*per, min(n, cur*per+per)
	lines = append(lines, fmt.Sprintf("Showing %d-%d of %d (Page %d of %d).", start+1, end, n, cur+1, pages))
	if cur < pages-1 {
		lines = append(lines, fmt.Sprintf("Next page: %d", cur+1))
	}
	if cur > 0 {
		lines = append(lines, fmt.Sprintf("Previous page: %d", cur-1))
	}
	return items[start:end], lines
}

// completenessNotes says what a listing lacks: records the bucket cap
// dropped, and those from before pagemux attached.
func completenessNotes(r *response, info Completeness, what string) {
	if info.Dropped > 0 {
		r.say("Note: %d older %s of the listed navigations were dropped: pagemux keeps the latest %d of each navigation.", info.Dropped, what, browser.BucketCap)
	}
	if info.Partial {
		r.say("Note: pagemux attached to this page after its document had started, so %s from before its first tool call on the page are missing.", what)
	}
}
