package browser

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/pagemux/pagemux/snapshot"
)

// This file holds the actions on several elements or on files: fill_form,
// drag and upload_file.

// fileChooserWait is how long upload_file waits for a click to open a file
// chooser, as chrome-devtools-mcp does.
const fileChooserWait = 3 * time.Second

// FormField is one element of a form and the value to fill in.
type FormField struct {
	UID   string
	Value string
}

// FormDialogError says that filling the element of UID opened a dialog. The
// elements before it were filled; the Remaining ones after it were not.
type FormDialogError struct {
	UID       string
	Remaining int
	Err       *DialogOpenedError
}

func (e *FormDialogError) Error() string {
	return fmt.Sprintf("filling the element with uid %s: %v", e.UID, e.Err)
}

// Unwrap gives the DialogOpenedError.
func (e *FormDialogError) Unwrap() error { return e.Err }

// FillForm fills the fields in order, as Fill does each, then waits once for
// the page to settle. Every uid is checked before the first is filled, so an
// unknown uid changes nothing; a field that fails stops the rest. It does not
// submit the form.
func (in Input) FillForm(ctx context.Context, fields []FormField) error {
	p := in.p
	for _, f := range fields {
		if _, err := p.UIDs.Lookup(f.UID); err != nil {
			return fmt.Errorf("%w; no element was filled", err)
		}
	}
	var at atomic.Int64 // the field being filled, read when a dialog ends the wait
	err := p.Act(ctx, 0, func(ctx context.Context) error {
		for i, f := range fields {
			at.Store(int64(i))
			if err := in.fill(ctx, f.UID, f.Value); err != nil {
				return fieldError(fields, i, err)
			}
		}
		return nil
	})
	if d, ok := errors.AsType[*DialogOpenedError](err); ok {
		i := int(at.Load())
		return &FormDialogError{UID: fields[i].UID, Remaining: len(fields) - 1 - i, Err: d}
	}
	return err
}

// fieldError says which field of a form failed and what became of the others.
func fieldError(fields []FormField, i int, err error) error {
	var done string
	switch {
	case len(fields) == 1:
	case i == 0:
		done = "; no element was filled"
	case i == len(fields)-1:
		done = "; the elements before it were filled"
	default:
		done = "; the elements before it were filled, the ones after it were not"
	}
	if errors.Is(err, snapshot.ErrUnknownUID) || errors.Is(err, snapshot.ErrStaleUID) {
		return fmt.Errorf("%w%s", err, done)
	}
	return fmt.Errorf("filling the element with uid %s failed: %w%s", fields[i].UID, err, done)
}

// Drag presses the mouse on the middle of the element of fromUID, moves it to
// the middle of the element of toUID and releases it there, then waits for
// the page to settle. It serves pages that follow the mouse (sliders,
// sortable lists) and pages with HTML5 drag and drop alike. Both elements
// must fit in the viewport together; Drag does not scroll during the drag.
func (in Input) Drag(ctx context.Context, fromUID, toUID string) error {
	p := in.p
	return p.Act(ctx, 0, func(ctx context.Context) error {
		from, err := p.resolve(ctx, fromUID)
		if err != nil {
			return err
		}
		to, err := p.resolve(ctx, toUID)
		if err != nil {
			return err
		}
		if _, _, err := from.center(ctx); err != nil {
			return err
		}
		tx, ty, err := to.center(ctx) // scrolls to the target, which may move the source
		if err != nil {
			return err
		}
		fx, fy, err := from.quadCenter(ctx)
		if err != nil {
			return err
		}
		if err := inViewport(ctx, [][2]float64{{fx, fy}, {tx, ty}}); err != nil {
			return fmt.Errorf("the elements with uid %s and uid %s %w", fromUID, toUID, err)
		}
		return chromedp.Do(ctx, chromedp.DragAndDropXY(fx, fy, tx, ty))
	})
}

// quadCenter returns the middle of the element's first box in viewport
// coordinates, without scrolling.
func (e *element) quadCenter(ctx context.Context) (x, y float64, err error) {
	q, err := e.quad(ctx)
	if err != nil {
		return 0, 0, err
	}
	return (q[0] + q[2] + q[4] + q[6]) / 4, (q[1] + q[3] + q[5] + q[7]) / 4, nil
}

// inViewport fails unless every point lies in the visible viewport.
func inViewport(ctx context.Context, points [][2]float64) error {
	m, err := chromedp.Call(ctx, page.GetLayoutMetrics, struct{}{})
	if err != nil {
		return err
	}
	v := m.CSSVisualViewport
	if v == nil {
		return nil
	}
	for _, pt := range points {
		if pt[0] < 0 || pt[1] < 0 || pt[0] > v.ClientWidth || pt[1] > v.ClientHeight {
			return fmt.Errorf("do not fit in the viewport (%.0fx%.0f) together; make the viewport bigger with resize_page, or move them closer first", v.ClientWidth, v.ClientHeight)
		}
	}
	return nil
}

// fileInputJS says whether an element is a file input, and whether it takes
// several files.
const fileInputJS = `function() {
  if (this instanceof HTMLInputElement && this.type === 'file') return this.multiple ? 'multiple' : 'single';
  return 'other';
}`

// UploadFile sets the files of the file input of uid; for any other element
// it clicks it and gives the files to the file chooser the click opens. It
// then waits for the page to settle. The paths must be readable by Chrome;
// UploadFile does not check them, nor read them itself.
func (in Input) UploadFile(ctx context.Context, uid string, files []string) error {
	p := in.p
	if len(files) == 0 {
		return errors.New("no file to upload: give at least one path")
	}
	return p.Act(ctx, 0, func(ctx context.Context) error {
		el, err := p.resolve(ctx, uid)
		if err != nil {
			return err
		}
		kind, err := p.callFunction(el.on(ctx), fileInputJS, el.object)
		if err != nil {
			return err
		}
		switch string(kind) {
		case `"single"`, `"multiple"`:
			if string(kind) == `"single"` && len(files) > 1 {
				return fmt.Errorf("the file input with uid %s takes one file (it has no multiple attribute), and %d were given; upload one file", uid, len(files))
			}
			_, err := chromedp.Call(el.on(ctx), dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: files, BackendNodeID: el.backend})
			return err
		}
		return in.uploadByChooser(ctx, el, files)
	})
}

// uploadByChooser clicks an element that should open a file chooser, such as
// a button that calls input.click(), and gives the chooser the files.
//
// The chooser is asked for and announced in the session of the element's
// frame (an out-of-process frame's own), where its input is too.
func (in Input) uploadByChooser(ctx context.Context, el *element, files []string) (err error) {
	p := in.p
	on := el.on(ctx)
	wctx, cancel := context.WithTimeout(on, p.Scale(fileChooserWait))
	defer cancel()
	opened := chromedp.Events(wctx, page.FileChooserOpened) // before the click, so none is missed
	if _, err := chromedp.Call(on, page.SetInterceptFileChooserDialog, page.SetInterceptFileChooserDialogParams{Enabled: true}); err != nil {
		return fmt.Errorf("watch for a file chooser: %w", err)
	}
	defer func() {
		// Also when ctx ended: a page left intercepting would swallow the
		// choosers of later clicks.
		octx, cancel := context.WithTimeout(context.WithoutCancel(on), 5*time.Second)
		defer cancel()
		_, _ = chromedp.Call(octx, page.SetInterceptFileChooserDialog, page.SetInterceptFileChooserDialogParams{Enabled: false})
	}()
	if err := el.click(ctx, 1); err != nil {
		return fmt.Errorf("the element with uid %s is not a file input, and it could not be clicked to open a file chooser: %w", el.uid, err)
	}
	for ev, err := range opened {
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("the element with uid %s is not a file input (<input type=file>), and clicking it opened no file chooser within %s; give the uid of the file input or of the element that opens its chooser",
				el.uid, p.Scale(fileChooserWait))
		}
		if ev.Mode == page.FileChooserOpenedModeSelectSingle && len(files) > 1 {
			return fmt.Errorf("the file chooser that the element with uid %s opened takes one file, and %d were given; upload one file", el.uid, len(files))
		}
		if ev.BackendNodeID == 0 {
			return fmt.Errorf("the element with uid %s opened a file chooser that belongs to no file input, which cannot be given files", el.uid)
		}
		_, err := chromedp.Call(on, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: files, BackendNodeID: ev.BackendNodeID})
		return err
	}
	return fmt.Errorf("the page went away while waiting for the file chooser of the element with uid %s", el.uid)
}
