package browser

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpio "github.com/chromedp/cdproto/io"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// PDFOptions say how to print a page; the zero value prints all of it on
// Letter paper, portrait, without backgrounds, at scale 1.
type PDFOptions struct {
	// Width and Height are the paper's size in inches; zero means Letter.
	Width, Height   float64
	Landscape       bool
	PrintBackground bool
	// PageRanges are one-based pages and ranges, such as "1-3, 5"; empty
	// means every page.
	PageRanges string
	// Scale scales the rendering, 0.1 to 2; zero means 1.
	Scale float64
}

// ErrPDFRange means Chrome refused the page ranges: bad syntax, a start past
// its end, or no page of the document in them.
const ErrPDFRange Error = "invalid page ranges"

// pdfTimeout bounds one print: Chrome lays the page out for paper, which
// takes seconds for long pages, never minutes.
const pdfTimeout = 2 * time.Minute

// PDF prints the page to w as Chrome makes the file, chunk by chunk
// (Page.printToPDF with a stream, read by IO.read), so that a large PDF
// never rides on one CDP message nor sits in memory whole. It returns the
// bytes written. Call it holding the page's lock. Chrome prints only when
// headless; a headed Chrome's refusal is an error that says so. A partial
// write is the caller's to remove.
func (cp Capture) PDF(ctx context.Context, o PDFOptions, w io.Writer) (int64, error) {
	p := cp.p
	if err := p.Ready(ctx); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, pdfTimeout)
	defer cancel()
	var n int64
	err := p.await(ctx, func(ctx context.Context) error {
		res, err := chromedp.Call(ctx, page.PrintToPDF, o.params())
		if err != nil {
			return pdfError(err, o)
		}
		n, err = readStream(ctx, context.WithoutCancel(ctx), res.Stream, false, "PDF", w)
		return err
	})
	return n, err
}

// params are the options as Page.printToPDF takes them.
func (o PDFOptions) params() page.PrintToPDFParams {
	return page.PrintToPDFParams{
		Landscape:       new(o.Landscape),
		PrintBackground: new(o.PrintBackground),
		Scale:           o.Scale,
		PaperWidth:      o.Width,
		PaperHeight:     o.Height,
		PageRanges:      o.PageRanges,
		TransferMode:    page.PrintToPDFTransferModeReturnAsStream,
	}
}

// readStream copies the IO stream h to w and closes it in Chrome, also when
// the copy fails: a stream of the tab's session, or of the browser's (a
// trace's) when onBrowser is set. closing is the context the close runs
// under, which may outlive ctx; what names the stream in errors.
func readStream(ctx, closing context.Context, h cdpio.StreamHandle, onBrowser bool, what string, w io.Writer) (int64, error) {
	if h == "" {
		return 0, fmt.Errorf("chrome returned no %s stream", what)
	}
	call := chromedp.Call[cdpio.ReadParams, cdpio.ReadResult]
	closeIt := chromedp.Call[cdpio.CloseParams, cdp.Empty]
	if onBrowser {
		call, closeIt = chromedp.CallBrowser[cdpio.ReadParams, cdpio.ReadResult], chromedp.CallBrowser[cdpio.CloseParams, cdp.Empty]
	}
	defer func() {
		cctx, cancel := context.WithTimeout(closing, 5*time.Second)
		_, _ = closeIt(cctx, cdpio.Close, cdpio.CloseParams{Handle: h})
		cancel()
	}()
	var n int64
	for {
		res, err := call(ctx, cdpio.Read, cdpio.ReadParams{Handle: h, Size: readChunk})
		if err != nil {
			return n, fmt.Errorf("read the %s from chrome: %w", what, err)
		}
		m, err := w.Write(res.Data)
		n += int64(m)
		if err != nil {
			return n, err
		}
		if res.EOF {
			return n, nil
		}
	}
}

// cdpCode is the code Chrome's error messages end with, " (-32000)".
var cdpCode = regexp.MustCompile(` \(-?\d+\)$`)

// pdfError explains Chrome's refusals to print.
func pdfError(err error, o PDFOptions) error {
	msg := cdpCode.ReplaceAllString(err.Error(), "")
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(lower, "range"):
		return fmt.Errorf("%w %q: chrome says %q; give one-based pages and ranges such as \"1-3, 5\", each start at most its end, and at least one page the document has", ErrPDFRange, o.PageRanges, msg)
	case strings.Contains(lower, "not implemented") || strings.Contains(lower, "not supported"):
		return fmt.Errorf("chrome cannot print this page to PDF (%s): Chrome prints only when headless; start pagemux with a headless browser", msg)
	}
	return fmt.Errorf("print to PDF: %w", err)
}
