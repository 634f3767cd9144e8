package pagelock

import (
	"context"
	"sync"
	"time"
)

// Line puts the calls of one client in the order they arrived, so that they
// take their places in the lock queues in that order even when they reach
// Reserve from different goroutines. A transport takes a Ticket for each
// call as it reads the request, before handing it to a worker; the worker
// waits for its Turn, reserves its locks, and Admits the next ticket. Calls
// on different locks still run side by side: a turn lasts only until the
// call has queued, not until it holds its locks.
//
// A Line also orders changes that later calls depend on but that take no
// lock of theirs, such as which page is selected: a call can Hold the line's
// state while it runs, and a later call that reads that state AwaitHolds.
//
// The zero value is ready for use. A Line is safe for concurrent use. It does
// not time out (but for the lost numbers of TakeNumbered): a ticket that is
// never admitted blocks the ones behind it, so every path of a call must
// Admit its ticket.
type Line struct {
	mu    sync.Mutex
	last  chan struct{}   // closed when the last ticket taken was admitted
	holds []chan struct{} // the holds not yet released, oldest first
	// numbered are the done channels of TakeNumbered's tickets, by number,
	// kept until both the ticket and its successor were taken.
	numbered map[uint64]*numberedSlot
}

// numberedSlot is the done channel of ticket n of a numbered line.
type numberedSlot struct {
	done             chan struct{}
	arrived          chan struct{} // closed when ticket n is taken
	taken, nextTaken bool
}

// Ticket is one call's place in a Line. The methods of a nil Ticket return
// at once, so code that runs without a Line needs no special case.
type Ticket struct {
	line *Line
	prev <-chan struct{} // closed when the ticket before was admitted
	done chan struct{}   // closed when this one is admitted
	once sync.Once
	// prevArrived, numbered, is closed when the ticket before was taken;
	// one not taken within gapWait is given up for lost.
	prevArrived <-chan struct{}
}

// Take returns the next ticket of l. The ticket's turn comes when every
// ticket taken before it was admitted. Take does not wait.
func (l *Line) Take() *Ticket {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := &Ticket{line: l, prev: l.last, done: make(chan struct{})}
	l.last = t.done
	return t
}

// TakeNumbered returns ticket n (counting from 1) of l, for a client that
// numbers its calls because they can reach the server out of order, such as
// a bridge that sends each on an HTTP request of its own. Ticket n's turn
// comes when tickets 1 to n-1 were admitted, whichever arrived first. A
// number not taken within gapWait of its successor's turn is given up for
// lost: it holds the ones after it that long at most, and they keep their
// order. A number taken again while the first is kept takes its turn at
// once. A line is used with Take or with TakeNumbered, not both. n 0 is Take.
func (l *Line) TakeNumbered(n uint64) *Ticket {
	if n == 0 {
		return l.Take()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.numbered == nil {
		l.numbered = make(map[uint64]*numberedSlot)
	}
	slot := func(k uint64) *numberedSlot {
		s, ok := l.numbered[k]
		if !ok {
			s = &numberedSlot{done: make(chan struct{}), arrived: make(chan struct{})}
			l.numbered[k] = s
		}
		return s
	}
	me := slot(n)
	if me.taken {
		// A number that came twice, from a client that retried or started
		// counting again: the repeat keeps no place in the line, for sharing
		// the first's done channel would close it twice.
		return &Ticket{line: l, done: make(chan struct{})}
	}
	t := &Ticket{line: l, done: me.done}
	me.taken = true
	close(me.arrived)
	if n > 1 {
		prev := slot(n - 1)
		t.prev, t.prevArrived = prev.done, prev.arrived
		prev.nextTaken = true
		if prev.taken {
			delete(l.numbered, n-1)
		}
	}
	if me.nextTaken {
		delete(l.numbered, n)
	}
	return t
}

// gapWait bounds how long a numbered ticket waits for a number before it
// that never came (its request was lost).
const gapWait = 5 * time.Second

// Turn waits until every earlier ticket of the line was admitted, or ctx
// ends. After an error the ticket still admits itself once its turn comes,
// so the calls behind it are not stuck.
func (t *Ticket) Turn(ctx context.Context) error {
	if t == nil || t.prev == nil {
		return nil
	}
	if !t.awaitPrev(ctx.Done()) {
		t.Admit()
		return ctx.Err()
	}
	t.prev = nil // the turn came, or the ticket before is lost: Admit need not wait
	return nil
}

// awaitPrev waits until the ticket before t was admitted or, numbered, was
// not taken within gapWait. A ticket that was taken is always admitted, so
// from then on there is no gap to wait out. It returns false if stop closed
// first.
func (t *Ticket) awaitPrev(stop <-chan struct{}) bool {
	arrived := t.prevArrived
	var gap <-chan time.Time
	if arrived != nil {
		timer := time.NewTimer(gapWait)
		defer timer.Stop()
		gap = timer.C
	}
	for {
		select {
		case <-t.prev:
			return true
		case <-arrived:
			arrived, gap = nil, nil
		case <-gap:
			return true // lost: go on without it; the ones after follow t
		case <-stop:
			return false
		}
	}
}

// Admit ends t's turn: the next ticket's turn comes once t's has come. It is
// idempotent, and it does not wait: called before t's turn came, as when a
// call fails before it reached its Turn, it admits t as soon as its turn
// comes.
func (t *Ticket) Admit() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		if t.prev == nil {
			close(t.done)
			return
		}
		select {
		case <-t.prev:
			close(t.done)
		default:
			go func() {
				t.awaitPrev(nil)
				close(t.done)
			}()
		}
	})
}

// Hold marks state of the line that t's call is changing, such as the
// selected page, until the returned release is called: a later ticket that
// AwaitHolds waits for it. Call it during t's turn, so that holds come in
// ticket order. release is idempotent.
func (t *Ticket) Hold() (release func()) {
	if t == nil {
		return func() {}
	}
	ch := make(chan struct{})
	l := t.line
	l.mu.Lock()
	l.holds = append(l.holds, ch)
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(ch)
			l.mu.Lock()
			defer l.mu.Unlock()
			for i, h := range l.holds {
				if h == ch {
					l.holds = append(l.holds[:i], l.holds[i+1:]...)
					break
				}
			}
		})
	}
}

// AwaitHolds waits, during t's turn, until every hold taken by an earlier
// ticket is released, or ctx ends.
func (t *Ticket) AwaitHolds(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.line.mu.Lock()
	holds := append([]chan struct{}(nil), t.line.holds...)
	t.line.mu.Unlock()
	for _, h := range holds {
		select {
		case <-h:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// ticketKey is the context key of a call's Ticket.
type ticketKey struct{}

// WithTicket returns a copy of ctx that carries t, from the transport that
// took it to the code that reserves the call's locks.
func WithTicket(ctx context.Context, t *Ticket) context.Context {
	return context.WithValue(ctx, ticketKey{}, t)
}

// TicketFrom returns the Ticket WithTicket put in ctx, or nil.
func TicketFrom(ctx context.Context) *Ticket {
	t, _ := ctx.Value(ticketKey{}).(*Ticket)
	return t
}
