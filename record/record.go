// Package record keeps a record of each agent session (--record DIR): every
// tool call it made, with its arguments (secrets by name), its answer
// (secrets masked), its outcome, timing and lock wait, and after each action
// (a navigation, an input) the page's snapshot text and a screenshot. A
// Recorder writes them as a tools.Observer; a Viewer serves them for replay
// (/ui/records); Export turns a record's navigations, clicks and fills into
// a `pagemux smoke --steps` file.
//
// A record is one directory per session, private to pagemux's user:
//
//	DIR/<record id>/meta.json         who the session was, when it began
//	DIR/<record id>/steps.jsonl       one Step a line, in the order calls ended
//	DIR/<record id>/00007.txt         step 7's snapshot text
//	DIR/<record id>/00007.jpg         step 7's screenshot
//
// A record is bounded (Options.MaxBytes): past its cap the last line says it
// stopped, and nothing more is written to it.
package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"
)

// File names inside a record's directory.
const (
	metaFile  = "meta.json"
	stepsFile = "steps.jsonl"
)

// Meta is who a record's session was (meta.json).
type Meta struct {
	// ID is the record's directory name.
	ID string `json:"id"`
	// Agent is the session's agent identity (agents.Agent.ID), "" on
	// stdio; Token the name of its --auth-token, "" for none.
	Agent   string    `json:"agent,omitempty"`
	Token   string    `json:"token,omitempty"`
	Session string    `json:"session,omitempty"`
	Started time.Time `json:"started"`
}

// Step is one call of a record (a line of steps.jsonl).
type Step struct {
	// N numbers the record's steps from 1.
	N    int    `json:"n"`
	Call uint64 `json:"call"`
	Tool string `json:"tool"`
	// Args are the call's arguments as the agent sent them: a secret as
	// ${NAME}, never its value.
	Args  json.RawMessage `json:"args,omitempty"`
	Page  int             `json:"page,omitempty"`
	Locks []string        `json:"locks,omitempty"`
	// Arrived is when the call came; WaitedMs how long it waited for its
	// locks; TookMs how long it took in all.
	Arrived  time.Time `json:"arrived"`
	WaitedMs float64   `json:"waitedMs"`
	TookMs   float64   `json:"tookMs"`
	// Outcome is "ok", "error" or "cancelled"; Answer the answer's text
	// (an error's message when Outcome is "error"), secrets masked, cut
	// to maxAnswer bytes.
	Outcome string `json:"outcome"`
	Answer  string `json:"answer,omitempty"`
	// URL and Title are the page's after the call (masked).
	URL   string `json:"url,omitempty"`
	Title string `json:"title,omitempty"`
	// Selectors are CSS selectors of the elements the call's uids named
	// (click, fill: one; fill_form: one per element, in order), found in
	// the page before the call acted; "" for an element none was found for.
	Selectors []string `json:"selectors,omitempty"`
	// Snapshot and Screenshot name the files of the page after an action
	// on it, in the record's directory; Note says why one is missing.
	// new_page, which holds no lock on the page it opens, has neither.
	Snapshot   string `json:"snapshot,omitempty"`
	Screenshot string `json:"screenshot,omitempty"`
	Note       string `json:"note,omitempty"`
	// Stopped, on the last line alone, says why the record ends early:
	// its cap was reached. Such a line is no call.
	Stopped string `json:"stopped,omitempty"`
}

// Record is one record as read back: its Meta and Steps.
type Record struct {
	Meta  Meta   `json:"meta"`
	Steps []Step `json:"steps"`
}

// ErrNoRecord is Open's error for a name that is no record of the directory.
var ErrNoRecord = errors.New("no such record")

// validID matches the names Recorder gives records; nothing else is opened.
var validID = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[A-Za-z0-9._-]{1,64}$`)

// validFile matches the snapshot and screenshot files of a record.
var validFile = regexp.MustCompile(`^[0-9]{5}\.(txt|jpg)$`)

// List returns the records of dir, newest first. A directory that is no
// record (no meta.json) is left out.
func List(dir string) ([]Meta, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Meta
	for _, e := range entries {
		if !e.IsDir() || !validID.MatchString(e.Name()) {
			continue
		}
		m, err := readMeta(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Meta) int { return b.Started.Compare(a.Started) })
	return out, nil
}

// Open reads the record id of dir.
func Open(dir, id string) (*Record, error) {
	if !validID.MatchString(id) {
		return nil, fmt.Errorf("%w: %q", ErrNoRecord, id)
	}
	return Read(filepath.Join(dir, id))
}

// Read reads the record in directory path: its meta.json and every whole
// line of its steps.jsonl.
func Read(path string) (*Record, error) {
	m, err := readMeta(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no %s; give the directory of one session's record", ErrNoRecord, path, metaFile)
	}
	if err != nil {
		return nil, err
	}
	r := &Record{Meta: m, Steps: []Step{}}
	b, err := os.ReadFile(filepath.Join(path, stepsFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for line := 1; sc.Scan(); line++ {
		var s Step
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", filepath.Join(path, stepsFile), line, err)
		}
		r.Steps = append(r.Steps, s)
	}
	return r, sc.Err()
}

// readMeta reads a record directory's meta.json.
func readMeta(path string) (Meta, error) {
	var m Meta
	b, err := os.ReadFile(filepath.Join(path, metaFile))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %v", filepath.Join(path, metaFile), err)
	}
	return m, nil
}
