package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pagemux/pagemux/browser"
)

// pdfTools lists pdf_save, which takes the page's lock (pageScope) while
// Chrome prints it.
func (s *Server) pdfTools() []tool { return []tool{s.pdfSave()} }

type pdfArgs struct {
	pageArg
	Filename        string  `json:"filename,omitempty" jsonschema:"File name to save the PDF to, a path relative to the workspace (its first root) or absolute inside it. Defaults to page-{timestamp}.pdf."`
	Format          string  `json:"format,omitempty" jsonschema:"Paper format: Letter (default), Legal, Tabloid, Ledger, A0, A1, A2, A3, A4, A5 or A6. Incompatible with width and height."`
	Width           string  `json:"width,omitempty" jsonschema:"Paper width with a unit: px, in, cm or mm (\"8.5in\", \"210mm\"); a bare number is px. Give height too."`
	Height          string  `json:"height,omitempty" jsonschema:"Paper height with a unit: px, in, cm or mm; a bare number is px. Give width too."`
	Landscape       bool    `json:"landscape,omitempty" jsonschema:"Paper orientation: landscape instead of portrait."`
	PrintBackground bool    `json:"printBackground,omitempty" jsonschema:"Print background colors and images."`
	PageRanges      string  `json:"pageRanges,omitempty" jsonschema:"One-based pages and ranges to print, such as \"1-3, 5\". Empty prints every page."`
	Scale           float64 `json:"scale,omitempty" jsonschema:"Scale of the rendering, 0.1 to 2. Default 1."`
}

// paperFormats are the paper sizes by name, width and height in inches, as
// Playwright and puppeteer name them.
var paperFormats = map[string][2]float64{
	"Letter": {8.5, 11}, "Legal": {8.5, 14}, "Tabloid": {11, 17}, "Ledger": {17, 11},
	"A0": {33.1, 46.8}, "A1": {23.4, 33.1}, "A2": {16.54, 23.4}, "A3": {11.7, 16.54},
	"A4": {8.27, 11.7}, "A5": {5.83, 8.27}, "A6": {4.13, 5.83},
}

var paperNames = []string{"Letter", "Legal", "Tabloid", "Ledger", "A0", "A1", "A2", "A3", "A4", "A5", "A6"}

func (s *Server) pdfSave() tool {
	t := newTool("pdf_save", "Saves the page as a PDF file in the workspace, as Chrome prints it (paper size, orientation, backgrounds, page ranges, scale). Chrome prints only when headless.", pageScope,
		func(ctx context.Context, c *call, a *pdfArgs) error {
			opts, err := pdfOptions(a)
			if err != nil {
				return err
			}
			name := a.Filename
			if name == "" {
				name = "page-" + time.Now().UTC().Format("2006-01-02T15-04-05.000Z") + ".pdf"
			}
			full, err := s.files.output(ctx, name)
			if err != nil {
				return err
			}
			if err := s.refuseSecretPrint(ctx, c.page); err != nil {
				return err
			}
			n, err := writePDF(ctx, c.page, opts, full)
			if err != nil {
				if errors.Is(err, browser.ErrPDFRange) {
					return &argError{err.Error()}
				}
				return err
			}
			c.resp.say("Saved page %d as PDF to %s (%d bytes).", c.page.ID, full, n)
			return nil
		})
	patchSchema(&t, map[string]map[string]any{
		"format": {"enum": paperNames},
		"scale":  {"minimum": 0.1, "maximum": 2},
	})
	return t
}

// shownTextJS is what a print of the page would show as text: the main
// document's title, text and the values of its fields (a password field
// prints as dots).
const shownTextJS = `() => {
  const parts = [document.title, document.body ? document.body.innerText : ''];
  for (const el of document.querySelectorAll('input, textarea, select')) {
    if (el.type !== 'password' && el.type !== 'hidden') parts.push(el.value);
  }
  return parts.join('\n');
}`

// refuseSecretPrint refuses to print a page that shows the value of a
// secret (--secrets): the masks that keep values out of answers and text
// files cannot reach into a PDF's drawn text. It checks the main document
// only; with no secrets it sends nothing.
func (s *Server) refuseSecretPrint(ctx context.Context, p *browser.Page) error {
	if s.masker == nil {
		return nil
	}
	raw, err := p.Evaluate(ctx, shownTextJS, nil)
	if err != nil {
		return fmt.Errorf("check the page for secrets before printing: %w", err)
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return fmt.Errorf("check the page for secrets before printing: %w", err)
	}
	if s.masker.Mask(text) != text {
		return &argError{fmt.Sprintf("page %d shows the value of a secret (in its text or a field), and a PDF would carry it where no mask reaches; clear it from the page (fill the field with \"\") or print another page", p.ID)}
	}
	return nil
}

// writePDF prints the page into the file at full, removing what it wrote
// if the print fails.
func writePDF(ctx context.Context, p *browser.Page, o browser.PDFOptions, full string) (int64, error) {
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", full, err)
	}
	n, err := p.Capture().PDF(ctx, o, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write %s: %w", full, cerr)
	}
	if err != nil {
		os.Remove(full)
		return 0, err
	}
	return n, nil
}

// pdfOptions checks the arguments and turns them into Chrome's terms.
func pdfOptions(a *pdfArgs) (browser.PDFOptions, error) {
	o := browser.PDFOptions{Landscape: a.Landscape, PrintBackground: a.PrintBackground, PageRanges: strings.TrimSpace(a.PageRanges), Scale: a.Scale}
	if a.Scale != 0 && (a.Scale < 0.1 || a.Scale > 2) {
		return o, &argError{fmt.Sprintf("invalid scale %v: want 0.1 to 2", a.Scale)}
	}
	switch {
	case a.Format != "" && (a.Width != "" || a.Height != ""):
		return o, &argError{"format and width/height cannot be used together: give a format, or both width and height"}
	case a.Format != "":
		size, ok := paperFormats[a.Format]
		if !ok {
			return o, &argError{fmt.Sprintf("invalid format %q: want one of %s", a.Format, strings.Join(paperNames, ", "))}
		}
		o.Width, o.Height = size[0], size[1]
	case (a.Width == "") != (a.Height == ""):
		return o, &argError{"give both width and height, or neither (a format, Letter by default)"}
	case a.Width != "":
		var err error
		if o.Width, err = paperLength("width", a.Width); err != nil {
			return o, err
		}
		if o.Height, err = paperLength("height", a.Height); err != nil {
			return o, err
		}
	}
	return o, nil
}

// lengthRE is a paper length: a positive number and an optional unit.
var lengthRE = regexp.MustCompile(`^\s*(\d+(?:\.\d+)?|\.\d+)\s*(px|in|cm|mm)?\s*$`)

// inches are the inches of one of each unit (CSS's 96 px to the inch).
var inches = map[string]float64{"": 1.0 / 96, "px": 1.0 / 96, "in": 1, "cm": 1 / 2.54, "mm": 1 / 25.4}

// maxPaperInches bounds a paper side: past A0's long side twice over is a
// mistake, not a paper.
const maxPaperInches = 100

// paperLength parses a width or height into inches.
func paperLength(name, v string) (float64, error) {
	m := lengthRE.FindStringSubmatch(strings.ToLower(v))
	if m == nil {
		return 0, &argError{fmt.Sprintf("invalid %s %q: want a number with a unit, px, in, cm or mm (\"8.5in\", \"210mm\"); a bare number is px", name, v)}
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	in := n * inches[m[2]]
	if in < 0.1 || in > maxPaperInches {
		return 0, &argError{fmt.Sprintf("invalid %s %q: want 0.1 to %d inches of paper", name, v, maxPaperInches)}
	}
	return in, nil
}
