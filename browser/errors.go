package browser

import "fmt"

// Error is the type of the sentinel errors of this package.
type Error string

// Error satisfies the error interface.
func (e Error) Error() string { return string(e) }

// Sentinel errors. The errors that reach an agent wrap them with a message
// that says what to do next; match them with errors.Is.
const (
	// ErrPageClosed is wrapped by PageClosedError.
	ErrPageClosed Error = "page is closed"
	// ErrNoPage means a page id that was never handed out.
	ErrNoPage Error = "no such page"
	// ErrLastPage means an attempt to close the only open page.
	ErrLastPage Error = "the last open page cannot be closed"
	// ErrDialogOpen means a JavaScript dialog blocks the page.
	ErrDialogOpen Error = "A dialog is open"
	// ErrNoDialog means handle_dialog was called with no dialog open.
	ErrNoDialog Error = "No open dialog found"
	// ErrNavigationTimeout means the page still loads when the wait ends.
	ErrNavigationTimeout Error = "navigation timed out: the page is still loading; wait_for the content you need or navigate again with a longer timeout"
	// ErrCrashed means the page's renderer died.
	ErrCrashed Error = "the page crashed"
	// ErrStart means Chrome could not be started or attached.
	ErrStart Error = "chrome could not start"
)

// PageClosedError is returned for a page that was closed, by the agent or by
// the page itself. It does not say who closed it.
type PageClosedError struct{ ID int }

func (e *PageClosedError) Error() string { return fmt.Sprintf("page %d is closed", e.ID) }

// Unwrap makes errors.Is(err, ErrPageClosed) hold.
func (e *PageClosedError) Unwrap() error { return ErrPageClosed }

// NoPageError is returned for a page id that no page ever had.
type NoPageError struct{ ID int }

func (e *NoPageError) Error() string {
	return fmt.Sprintf("no page with id %d; call list_pages to see the open pages", e.ID)
}

// Unwrap makes errors.Is(err, ErrNoPage) hold.
func (e *NoPageError) Unwrap() error { return ErrNoPage }
