package tools

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pagemux/pagemux/pagelock"
)

// pdfPage is a page object of a PDF, and mediaBox a page's paper.
var (
	pdfPage  = regexp.MustCompile(`/Type\s*/Page\b[^s]`)
	mediaBox = regexp.MustCompile(`/MediaBox\s*\[\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*\]`)
)

// pdfInfo reads a saved PDF's page count and its first page's size in
// points, as a PDF reader finds them (Chrome writes page objects plain).
func pdfInfo(t *testing.T, answer string) (pages int, width, height float64) {
	t.Helper()
	_, data := savedFile(t, answer)
	if string(data[:5]) != "%PDF-" {
		t.Fatalf("not a PDF: it starts %q", data[:min(len(data), 20)])
	}
	pages = len(pdfPage.FindAll(data, -1))
	m := mediaBox.FindSubmatch(data)
	if m == nil {
		t.Fatalf("no MediaBox in the PDF")
	}
	f := func(b []byte) float64 { v, _ := strconv.ParseFloat(string(b), 64); return v }
	return pages, f(m[3]) - f(m[1]), f(m[4]) - f(m[2])
}

// TestPDFSave prints a page of several sheets: a PDF whose pages and paper
// follow the arguments, and bad arguments refused with what to do.
func TestPDFSave(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t, pagelock.PerPage)
	id := e.openPage(t, "/page2.html")
	e.eval(t, id, `() => { document.body.innerHTML = Array.from({length: 200}, (_, i) => '<p>line ' + i + '</p>').join(''); return document.body.scrollHeight }`)
	dir := fmt.Sprintf("pdf-test-%d", id)
	save := func(args map[string]any) string {
		t.Helper()
		args["pageId"] = id
		return e.ok(t, "pdf_save", args)
	}

	all := save(map[string]any{"filename": dir + "/all.pdf"})
	mustContain(t, all, fmt.Sprintf("Saved page %d as PDF to ", id))
	pages, w, h := pdfInfo(t, all)
	if pages < 3 || w != 612 || h != 792 {
		t.Errorf("the whole page: %d pages of %vx%v pt, want 3 or more of Letter (612x792)", pages, w, h)
	}
	for _, tt := range []struct {
		args  map[string]any
		pages int
		w, h  float64
	}{
		{map[string]any{"pageRanges": "1-2"}, 2, 612, 792},
		{map[string]any{"pageRanges": "1, 3"}, 2, 612, 792},
		{map[string]any{"pageRanges": "2"}, 1, 612, 792},
		{map[string]any{"pageRanges": "1", "landscape": true}, 1, 792, 612},
		{map[string]any{"pageRanges": "1", "format": "A4"}, 1, 595.44, 842.4},
		{map[string]any{"pageRanges": "1", "width": "100mm", "height": "2in"}, 1, 283.46, 144},
		{map[string]any{"pageRanges": "1", "printBackground": true, "scale": 0.5}, 1, 612, 792},
	} {
		tt.args["filename"] = fmt.Sprintf("%s/%v.pdf", dir, len(tt.args))
		pages, w, h := pdfInfo(t, save(tt.args))
		if pages != tt.pages || !near(w, tt.w) || !near(h, tt.h) {
			t.Errorf("%v: %d pages of %vx%v pt, want %d of %vx%v", tt.args, pages, w, h, tt.pages, tt.w, tt.h)
		}
	}

	// A PDF of several MiB comes over in chunks (IO.read), whole: an image
	// of noise, which no compression shrinks.
	big := e.openPage(t, "/page2.html")
	e.eval(t, big, `async () => {
		const c = document.createElement('canvas'); c.width = c.height = 1200;
		const ctx = c.getContext('2d'); const img = ctx.createImageData(1200, 1200);
		for (let i = 0; i < img.data.length; i += 65536) crypto.getRandomValues(img.data.subarray(i, i + 65536));
		for (let i = 3; i < img.data.length; i += 4) img.data[i] = 255;
		ctx.putImageData(img, 0, 0);
		const el = new Image(); el.src = c.toDataURL(); await el.decode(); el.style.width = '6in'; document.body.append(el);
		return el.naturalWidth;
	}`)
	large := e.ok(t, "pdf_save", map[string]any{"pageId": big, "filename": dir + "/large.pdf"})
	_, data := savedFile(t, large)
	if len(data) < 2<<20 || !strings.HasPrefix(string(data), "%PDF-") || !strings.Contains(string(data[len(data)-32:]), "%%EOF") {
		t.Errorf("a large PDF: %d bytes, starts %q, ends %q", len(data), data[:8], data[len(data)-32:])
	}

	// Bad input: Chrome's refusals of ranges made clear, the rest before
	// Chrome is asked; no file is left behind.
	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pageRanges": "3-1"}, `invalid page ranges "3-1": chrome says `},
		{map[string]any{"pageRanges": "abc"}, `invalid page ranges "abc": chrome says `},
		{map[string]any{"pageRanges": "999"}, `give one-based pages and ranges such as "1-3, 5"`},
		{map[string]any{"format": "a4"}, `invalid argument "format" for pdf_save: want one of "Letter"`},
		{map[string]any{"format": "A4", "width": "10in", "height": "10in"}, "format and width/height cannot be used together"},
		{map[string]any{"width": "10in"}, "give both width and height"},
		{map[string]any{"width": "10 furlongs", "height": "1in"}, `invalid width "10 furlongs": want a number with a unit`},
		{map[string]any{"width": "1000in", "height": "1in"}, `invalid width "1000in": want 0.1 to 100 inches`},
		{map[string]any{"scale": 5}, `invalid argument "scale" for pdf_save`},
		{map[string]any{"filename": "/etc/pagemux-test.pdf"}, "is outside the allowed roots"},
	} {
		args := map[string]any{"pageId": id, "filename": dir + "/bad.pdf"}
		for k, v := range tt.args {
			args[k] = v
		}
		mustContain(t, e.fails(t, "pdf_save", args), tt.want)
	}
	for _, p := range []string{"/etc/pagemux-test.pdf"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a PDF was written to %s", p)
		}
	}
	saved, _ := savedFile(t, all)
	if _, err := os.Stat(saved[:len(saved)-len("all.pdf")] + "bad.pdf"); err == nil {
		t.Error("a failed print left its file behind")
	}
}

// near says two sizes in points match to within rounding.
func near(a, b float64) bool { return a-b < 0.5 && b-a < 0.5 }
