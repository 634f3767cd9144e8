package browser

import (
	"errors"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
)

// TestPDFParams: the options as Page.printToPDF takes them, always as a
// stream, so that a large PDF never rides on one message.
func TestPDFParams(t *testing.T) {
	p := PDFOptions{Width: 8.27, Height: 11.7, Landscape: true, PageRanges: "1-2", Scale: 0.5}.params()
	if p.TransferMode != page.PrintToPDFTransferModeReturnAsStream || !*p.Landscape || *p.PrintBackground ||
		p.PaperWidth != 8.27 || p.PaperHeight != 11.7 || p.PageRanges != "1-2" || p.Scale != 0.5 {
		t.Errorf("params: %+v", p)
	}
	// The zero value leaves paper and scale to Chrome (Letter, 1).
	if z := (PDFOptions{}).params(); z.PaperWidth != 0 || z.Scale != 0 || z.TransferMode != page.PrintToPDFTransferModeReturnAsStream {
		t.Errorf("zero params: %+v", z)
	}
}

// TestPDFError: Chrome's refusals, said so that an agent knows what to do.
func TestPDFError(t *testing.T) {
	o := PDFOptions{PageRanges: "3-1"}
	err := pdfError(errors.New("Page range is invalid (start > end) (-32000)"), o)
	if !errors.Is(err, ErrPDFRange) || !strings.Contains(err.Error(), `invalid page ranges "3-1": chrome says "Page range is invalid (start > end)"; give one-based pages`) {
		t.Errorf("a bad range: %v", err)
	}
	if err := pdfError(errors.New("PrintToPDF is not implemented (-32000)"), o); errors.Is(err, ErrPDFRange) || !strings.Contains(err.Error(), "Chrome prints only when headless") {
		t.Errorf("a headed Chrome: %v", err)
	}
	if err := pdfError(errors.New("target closed"), o); !strings.HasPrefix(err.Error(), "print to PDF: target closed") {
		t.Errorf("another error: %v", err)
	}
}
