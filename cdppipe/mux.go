package cdppipe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pagemux/pagemux/cdpcbor"
	"github.com/pagemux/pagemux/internal/jsonstr"
)

// Options say how a Mux treats the pipe it sits in. The zero value is a
// silent mux on a JSON pipe that takes messages of up to DefaultMaxMessage.
type Options struct {
	// Logger gets what the mux and its bridge have to say; nil: nothing is
	// logged.
	Logger *slog.Logger
	// MaxMessage bounds one message from Chrome (0: DefaultMaxMessage); see
	// DefaultMaxMessage for what happens past it.
	MaxMessage int
	// CBOR has Chrome speak CBOR on its pipe (--remote-debugging-pipe=cbor),
	// converted to JSON at the mux's edge; false keeps Chrome on JSON.
	CBOR bool
}

// muxIDBase is the first command id of an extra client. chromedp counts its
// ids from 1 and would need a billion commands to get here.
const muxIDBase = 1 << 30

// muxIDMax is the largest id Chrome takes (a 32-bit int).
const muxIDMax = 1<<31 - 1

// muxClientQueueCap bounds what Chrome sent an extra client that the client
// did not read yet; a client that falls further behind is dropped, rather
// than pagemux holding a browser's traffic for it.
const muxClientQueueCap = 256 << 20

// DefaultMaxMessage is the most bytes of one message from a launched Chrome
// that pagemux takes (Options.MaxMessage). A page decides how big some of
// them are (a script's string, a console message), and one message of
// 128 MiB cost pagemux 900 MB in copies along the way, so a message over
// it is read away as it comes: an answer is replaced by an error answer
// (tooBigCode) for its command, an event is dropped, a console message
// replaced by a warning that says so. A full-page screenshot or a response
// body within Chrome's own buffer stays well below it.
const DefaultMaxMessage = 32 << 20

// tooBigCode is the error code of an answer pagemux gives in place of one
// of Chrome's over its limit; JSON-RPC leaves -32000 to -32099 to servers.
const tooBigCode = -32090

// ErrClosed is the error of a call on a mux whose Chrome went away (its
// pipe closed).
var ErrClosed = errors.New("the connection to chrome is closed")

// Mux is the middle of the pipe between chromedp and one Chrome (see the
// package doc). Interpose makes one; it has no useful zero value.
type Mux struct {
	log *slog.Logger

	fromCDP, toCDP       *os.File // chromedp's side: what it writes, what it reads
	toChrome, fromChrome *os.File // Chrome's side
	// chromeEnds are Chrome's own ends of its pipes, which pagemux must
	// close once Chrome has its copies, or it would never see Chrome go.
	chromeEnds     []*os.File
	closeEndsOnce  sync.Once
	writeChromeMu  sync.Mutex
	cdpGone        atomic.Bool  // chromedp closed its end: what Chrome says is dropped
	lastFromChrome atomic.Int64 // unix nanoseconds of the last bytes read from Chrome
	lastToCDP      atomic.Int64 // unix nanoseconds of the last bytes chromedp took
	// busySince is when the reader began to wait on a consumer of Chrome's
	// bytes (chromedp's pipe, a streamed answer); 0 while it waits on Chrome.
	busySince atomic.Int64
	// divertBusySince is busySince of the conversion from CBOR, which waits
	// on the reader of a diverted answer (divert).
	divertBusySince atomic.Int64
	// readingChrome is set while a read of Chrome's pipe waits: then the
	// reader waits on Chrome, even inside a consumer's turn (a streamed
	// answer reads Chrome's pipe as it goes).
	readingChrome atomic.Bool

	maxMessage int // the most bytes of one message taken from Chrome
	// fromChromeJSON is Chrome's pipe converted from CBOR (package
	// cdpcbor), nil where Chrome speaks JSON; then commands are converted on
	// the way in.
	fromChromeJSON io.ReadCloser

	done      chan struct{} // closed when Chrome's end closed
	closeOnce sync.Once

	mu       sync.Mutex
	calls    map[int64]*muxCall
	nextID   int64
	sessions map[string]*muxClient // sessions of extra clients, to their client
	departed map[string]bool       // sessions of clients that left, until Chrome says they are detached
	clients  map[*muxClient]bool
}

// muxCall is a command of an extra client or of the mux itself, waiting for
// its answer.
type muxCall struct {
	client *muxClient      // a bridge client's command, or nil
	origID json.RawMessage // the client's own id
	reply  chan []byte     // the mux's own call: the whole answer
	// stream receives the answer as a reader instead (StreamCall).
	stream    chan *muxStream
	abandoned chan struct{}
	// cbor: the stream is Chrome's own CBOR message (its map), taken off
	// the conversion to JSON (divert).
	cbor bool
}

// startSignal is a launched Chrome's stdin. os/exec starts the goroutine
// that copies it to Chrome only after the process started, so its first
// Read is the moment pagemux may let go of Chrome's pipe ends. Chrome reads
// nothing from stdin; it gets an end of file at once.
type startSignal struct{ m *Mux }

func (s startSignal) Read([]byte) (int, error) {
	s.m.CloseChromeEnds()
	return 0, io.EOF
}

// muxStream hands a streamed answer to its caller, who closes done when it
// stopped reading.
type muxStream struct {
	r    io.Reader
	done chan struct{}
}

// newMux puts a mux between chromedp's pipe ends (fromCDP, toCDP) and
// Chrome's (toChrome, fromChrome); chromeEnds are the ends Chrome gets,
// closed here once Chrome has them; maxMessage bounds a message from Chrome
// (0: DefaultMaxMessage); cbor says Chrome speaks CBOR on its pipe. It
// starts the mux's goroutines.
func newMux(log *slog.Logger, fromCDP, toCDP, toChrome, fromChrome *os.File, chromeEnds []*os.File, maxMessage int, cbor bool) *Mux {
	if maxMessage <= 0 {
		maxMessage = DefaultMaxMessage
	}
	m := &Mux{
		log: log, fromCDP: fromCDP, toCDP: toCDP, toChrome: toChrome, fromChrome: fromChrome, chromeEnds: chromeEnds, maxMessage: maxMessage,
		done: make(chan struct{}), calls: map[int64]*muxCall{}, nextID: muxIDBase,
		sessions: map[string]*muxClient{}, departed: map[string]bool{}, clients: map[*muxClient]bool{},
	}
	if cbor {
		m.fromChromeJSON = cdpcbor.ToJSON(chromeReader{m}, m.divert)
	}
	go m.readCDP()
	go m.readChrome()
	return m
}

// CloseChromeEnds closes pagemux's copies of Chrome's pipe ends, so that
// Chrome's exit is seen as the end of its pipe. It must not run before
// os/exec has read them to start Chrome: it runs at Chrome's first read of
// its stdin (startSignal), or, as package browser does, once chromedp is
// done starting it, whether or not it did: both are ordered after the
// start. (Closing them when
// chromedp's first message arrived was ordered only through the kernel's
// pipe, a data race to the race detector.) Calls after the first do
// nothing.
func (m *Mux) CloseChromeEnds() {
	m.closeEndsOnce.Do(func() {
		for _, f := range m.chromeEnds {
			f.Close()
		}
	})
}

// readCDP forwards chromedp's messages to Chrome; when chromedp closes its
// end, Chrome's closes too, which makes Chrome exit.
func (m *Mux) readCDP() {
	defer m.toChrome.Close()
	br := bufio.NewReaderSize(m.fromCDP, 64<<10)
	for {
		msg, err := br.ReadBytes(0)
		if len(msg) > 0 && err == nil {
			if werr := m.writeChrome(msg); werr != nil {
				m.log.Debug("devtools pipe: writing to chrome", "error", werr)
			}
		}
		if err != nil {
			return
		}
	}
}

// SpeaksCBOR reports whether Chrome speaks CBOR on the pipe.
func (m *Mux) SpeaksCBOR() bool { return m.fromChromeJSON != nil }

// writeChrome writes one message, its NUL included, in one piece: in CBOR,
// without the NUL, where Chrome speaks that.
func (m *Mux) writeChrome(msg []byte) error {
	if m.SpeaksCBOR() {
		var err error
		if msg, err = cdpcbor.FromJSON(nil, bytes.TrimSuffix(msg, []byte{0})); err != nil {
			return err
		}
	}
	m.writeChromeMu.Lock()
	defer m.writeChromeMu.Unlock()
	_, err := m.toChrome.Write(msg)
	return err
}

// readChrome routes Chrome's messages until its end closes, then closes
// chromedp's, which chromedp takes for a lost connection as it would
// Chrome's own pipe.
func (m *Mux) readChrome() {
	defer m.close()
	var src io.Reader = chromeReader{m}
	if m.fromChromeJSON != nil {
		src = m.fromChromeJSON
	}
	br := bufio.NewReaderSize(src, 256<<10)
	for {
		id, isAnswer, err := peekAnswerID(br)
		if errors.Is(err, cdpcbor.ErrSyntax) {
			m.log.Error("devtools pipe: chrome does not speak the CBOR pagemux asked for; start pagemux with --pipe-json for this Chrome", "error", err)
		}
		if err != nil {
			return
		}
		switch {
		case isAnswer && id < muxIDBase:
			err = m.passToCDP(br)
		case isAnswer:
			call := m.takeCall(id)
			switch {
			case call == nil:
				err = skipMessage(br)
			case call.stream != nil:
				err = m.handStream(br, call)
			default:
				var msg []byte
				if msg, err = m.readMessage(br); err == nil {
					m.answered(call, msg)
				}
			}
		default:
			var msg []byte
			if msg, err = m.readMessage(br); err == nil && msg != nil {
				err = m.routeEvent(msg)
			}
		}
		if err != nil {
			return
		}
	}
}

// chromeReader reads Chrome's pipe and notes when bytes came, and when a
// read waits on Chrome, for answers.
type chromeReader struct{ m *Mux }

func (r chromeReader) Read(p []byte) (int, error) {
	r.m.readingChrome.Store(true)
	n, err := r.m.fromChrome.Read(p)
	r.m.readingChrome.Store(false)
	if n > 0 {
		r.m.lastFromChrome.Store(time.Now().UnixNano())
	}
	return n, err
}

// close ends the mux: chromedp's end closes, and every extra client and
// call fails.
func (m *Mux) close() {
	m.closeOnce.Do(func() {
		close(m.done)
		m.CloseChromeEnds()
		m.toCDP.Close()
		m.fromCDP.Close()
		m.toChrome.Close()
		m.fromChrome.Close()
		if m.fromChromeJSON != nil {
			m.fromChromeJSON.Close()
		}
		m.mu.Lock()
		clients := m.clients
		m.clients = map[*muxClient]bool{}
		m.mu.Unlock()
		for c := range clients {
			c.shut()
		}
	})
}

// answerPrefix is how Chrome begins an answer: the id comes first, and a
// sessionId, if any, last.
var answerPrefix = []byte(`{"id":`)

// peekAnswerID looks at the start of the next message, without reading it,
// and returns its id when it is an answer. It waits for the first bytes of
// the message only.
func peekAnswerID(br *bufio.Reader) (id int64, isAnswer bool, err error) {
	n := 1
	for {
		b, err := br.Peek(n)
		if err != nil {
			return 0, false, err
		}
		b, _ = br.Peek(br.Buffered())
		whole := false
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b, whole = b[:i], true
		}
		id, state := parseAnswerPrefix(b)
		if state != prefixMore || whole {
			return id, state == prefixAnswer, nil
		}
		n = len(b) + 1
	}
}

const (
	prefixMore = iota
	prefixAnswer
	prefixOther
)

// parseAnswerPrefix reads `{"id":123,` from the start of b.
func parseAnswerPrefix(b []byte) (int64, int) {
	if !bytes.HasPrefix(answerPrefix, b[:min(len(b), len(answerPrefix))]) {
		return 0, prefixOther
	}
	var id int64
	for i := len(answerPrefix); i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9' && i-len(answerPrefix) < 12:
			id = id*10 + int64(c-'0')
		case (c == ',' || c == '}') && i > len(answerPrefix):
			return id, prefixAnswer
		default:
			return 0, prefixOther
		}
	}
	return 0, prefixMore
}

// readMessage reads one whole message, without its NUL, and holds at most
// m.maxMessage bytes of it: one over that is read away as it comes, and
// what is returned in its place is an error answer for the same command
// and session, a console warning that says what was dropped, or, for
// another event, nil.
func (m *Mux) readMessage(br *bufio.Reader) ([]byte, error) {
	chunks, big, err := m.readChunks(br)
	switch {
	case err != nil:
		return nil, err
	case big != nil:
		return big.replacement(m.log, m.maxMessage), nil
	case len(chunks) == 1:
		return chunks[0], nil
	}
	return bytes.Join(chunks, nil), nil
}

// readChunks reads one message, without its NUL: into memory, as copies of
// the reader's chunks, when it has at most m.maxMessage bytes; else it is
// read to its end keeping only its first and last bigKeep bytes, in big.
// Chunks, not one growing slice: growing to 32 MiB by append allocates
// five times that.
func (m *Mux) readChunks(br *bufio.Reader) (chunks [][]byte, big *bigMessage, err error) {
	size := 0
	for {
		chunk, err := br.ReadSlice(0)
		if err != nil && err != bufio.ErrBufferFull {
			return nil, nil, err
		}
		if err == nil {
			chunk = chunk[:len(chunk)-1]
		}
		size += len(chunk)
		if big == nil && size > m.maxMessage {
			big = &bigMessage{}
			for _, c := range chunks {
				big.keep(c)
			}
			chunks = nil
		}
		if big != nil {
			big.keep(chunk)
		} else {
			chunks = append(chunks, bytes.Clone(chunk))
		}
		if err == nil {
			return chunks, big, nil
		}
	}
}

// bigKeep is how much of each end of a message over the limit is kept:
// enough for its id or method at the start, its sessionId at the end.
const bigKeep = 512

// bigMessage is what the mux keeps of a message over its limit.
type bigMessage struct {
	head, tail []byte
	size       int64
}

// keep notes the next part p of the message.
func (b *bigMessage) keep(p []byte) {
	b.size += int64(len(p))
	if len(b.head) < bigKeep {
		b.head = append(b.head, p[:min(len(p), bigKeep-len(b.head))]...)
	}
	b.keepTail(p)
}

// keepTail appends p to the kept end, keeping its last bigKeep bytes.
func (b *bigMessage) keepTail(p []byte) {
	b.tail = append(b.tail, p[max(0, len(p)-bigKeep):]...)
	if extra := len(b.tail) - bigKeep; extra > 0 {
		b.tail = b.tail[:copy(b.tail, b.tail[extra:])]
	}
}

// replacement is what goes on in place of the message: see readMessage.
func (b *bigMessage) replacement(log *slog.Logger, limit int) []byte {
	sid := messageSession(b.tail)
	session := ""
	if sid != "" {
		session = `,"sessionId":` + jsonstr.Quote(sid, false)
	}
	if id, state := parseAnswerPrefix(b.head); state == prefixAnswer {
		log.Warn("devtools pipe: an answer from chrome is over the limit; the command fails", "id", id, "bytes", b.size, "limit", limit)
		text := fmt.Sprintf("Chrome's answer is %s, over the %s that pagemux takes from Chrome in one message, so pagemux dropped it: ask for a smaller part at a time",
			sizeText(b.size), sizeText(int64(limit)))
		return fmt.Appendf(nil, `{"id":%d,"error":{"code":%d,"message":%s}%s}`, id, tooBigCode, jsonstr.Quote(text, false), session)
	}
	method := eventMethod(b.head)
	log.Warn("devtools pipe: an event from chrome is over the limit; dropped", "method", method, "bytes", b.size, "limit", limit)
	if method != "Runtime.consoleAPICalled" || sid == "" {
		return nil
	}
	text := fmt.Sprintf("pagemux dropped a console message of %s here: it is over the %s that pagemux takes from Chrome in one message", sizeText(b.size), sizeText(int64(limit)))
	return fmt.Appendf(nil, `{"method":"Runtime.consoleAPICalled","params":{"type":"warning","args":[{"type":"string","value":%s}],"executionContextId":0,"timestamp":%d}%s}`,
		jsonstr.Quote(text, false), time.Now().UnixMilli(), session)
}

// eventMethod reads the method at the start of an event, `{"method":"…"`.
func eventMethod(head []byte) string {
	rest, ok := bytes.CutPrefix(head, []byte(`{"method":"`))
	if !ok {
		return ""
	}
	if i := bytes.IndexByte(rest, '"'); i >= 0 {
		return string(rest[:i])
	}
	return ""
}

// sizeText says a size in bytes as people read it: 512 bytes, 3.5 MiB.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// skipMessage reads one message away without keeping it.
func skipMessage(br *bufio.Reader) error {
	for {
		_, err := br.ReadSlice(0)
		if err != bufio.ErrBufferFull {
			return err
		}
	}
}

// markBusy notes in since that a reader of Chrome's pipe waits on a
// consumer from now on; the func it returns ends that.
func (m *Mux) markBusy(since *atomic.Int64) func() {
	since.Store(time.Now().UnixNano())
	return func() { since.Store(0) }
}

// passToCDP gives chromedp its answer, chunk by chunk as it was read, or
// the error answer in its place when it is over the limit.
func (m *Mux) passToCDP(br *bufio.Reader) error {
	chunks, big, err := m.readChunks(br)
	if err != nil {
		return err
	}
	if big != nil {
		m.sendCDP(big.replacement(m.log, m.maxMessage))
		return nil
	}
	m.sendCDP(chunks...)
	return nil
}

// writeCDP writes to chromedp's end; once chromedp is gone, what Chrome
// still says is dropped.
func (m *Mux) writeCDP(b []byte) {
	if len(b) == 0 || m.cdpGone.Load() {
		return
	}
	if _, err := m.toCDP.Write(b); err != nil {
		m.cdpGone.Store(true)
		return
	}
	m.lastToCDP.Store(time.Now().UnixNano())
}

// sendCDP gives chromedp one whole message, written in the parts given.
func (m *Mux) sendCDP(parts ...[]byte) {
	defer m.markBusy(&m.busySince)()
	for _, p := range parts {
		m.writeCDP(p)
	}
	m.writeCDP([]byte{0})
}

// takeCall removes and returns the call of an id, nil when none waits.
func (m *Mux) takeCall(id int64) *muxCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.calls[id]
	delete(m.calls, id)
	return c
}

// register gives call the next free id of the mux's range.
func (m *Mux) register(call *muxCall) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		id := m.nextID
		m.nextID++
		if m.nextID > muxIDMax {
			m.nextID = muxIDBase
		}
		if _, taken := m.calls[id]; !taken {
			m.calls[id] = call
			return id
		}
	}
}

// handStream gives the answer to the call that streams it, and waits until
// the caller has read what it wants; the rest is read away.
func (m *Mux) handStream(br *bufio.Reader, call *muxCall) error {
	defer m.markBusy(&m.busySince)()
	r := &untilNUL{br: br}
	m.hand(r, call)
	return r.drain()
}

// hand gives r to the caller of call and waits until it stopped reading,
// or gave up before it began, or the mux closed (the caller may then have
// left without taking it).
func (m *Mux) hand(r io.Reader, call *muxCall) {
	h := &muxStream{r: r, done: make(chan struct{})}
	select {
	case call.stream <- h:
		<-h.done
	case <-call.abandoned:
	case <-m.done:
	}
}

// divert takes the answer to a call that reads Chrome's CBOR (StreamCall
// with cbor) off the conversion to JSON, and hands it over as it is; every
// other message is converted. It runs on the conversion's goroutine, which
// waits for the reader as readChrome waits for a stream's.
func (m *Mux) divert(id int64) func(io.Reader) {
	if id < muxIDBase {
		return nil
	}
	m.mu.Lock()
	call := m.calls[id]
	if call == nil || !call.cbor {
		m.mu.Unlock()
		return nil
	}
	delete(m.calls, id)
	m.mu.Unlock()
	return func(r io.Reader) {
		defer m.markBusy(&m.divertBusySince)()
		m.hand(r, call)
	}
}

// untilNUL reads one message and ends at its NUL.
type untilNUL struct {
	br  *bufio.Reader
	end bool
	err error
}

func (u *untilNUL) Read(p []byte) (int, error) {
	if u.end {
		return 0, io.EOF
	}
	if u.err != nil {
		return 0, u.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if _, err := u.br.Peek(1); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		u.err = err
		return 0, err
	}
	b, _ := u.br.Peek(min(u.br.Buffered(), len(p)))
	if i := bytes.IndexByte(b, 0); i >= 0 {
		n := copy(p, b[:i])
		u.br.Discard(n + 1)
		u.end = true
		return n, nil
	}
	n := copy(p, b)
	u.br.Discard(n)
	return n, nil
}

// drain reads the rest of the message away.
func (u *untilNUL) drain() error {
	if u.end {
		return nil
	}
	if u.err != nil {
		return u.err
	}
	u.end = true
	return skipMessage(u.br)
}

// answered delivers an answer to the call that waits for it.
func (m *Mux) answered(call *muxCall, msg []byte) {
	if call.client != nil {
		call.client.answer(call.origID, msg)
		return
	}
	select {
	case call.reply <- msg:
	default:
	}
}

// sessionSuffix is how the last member of a message that names a session
// begins: Chrome appends the sessionId to every message of a session.
var sessionSuffix = []byte(`,"sessionId":"`)

// messageSession returns the sessionId of a message from Chrome, "" for the
// browser's root session.
func messageSession(msg []byte) string {
	if !bytes.Contains(msg, []byte(`"sessionId"`)) {
		return ""
	}
	// Fast path: `…,"sessionId":"ID"}` at the very end. A sessionId inside
	// params would end with at least two braces.
	if i := bytes.LastIndex(msg, sessionSuffix); i >= 0 && bytes.HasSuffix(msg, []byte(`"}`)) {
		id := msg[i+len(sessionSuffix) : len(msg)-2]
		if !bytes.ContainsAny(id, `"\{}`) {
			return string(id)
		}
	}
	var top struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(msg, &top)
	return top.SessionID
}

// routeEvent gives an event to the client whose session sent it, else to
// chromedp.
func (m *Mux) routeEvent(msg []byte) error {
	sid := messageSession(msg)
	if sid == "" {
		if !m.aboutMuxSession(msg) {
			m.sendCDP(msg)
		}
		return nil
	}
	m.mu.Lock()
	c, departed := m.sessions[sid], m.departed[sid]
	m.mu.Unlock()
	switch {
	case c != nil:
		c.event(sid, msg)
	case departed:
		m.noteDetached(msg)
	default:
		m.sendCDP(msg)
	}
	return nil
}

// aboutMuxSession reports whether a root session's event tells of an extra
// client's session coming or going: that is none of chromedp's business.
func (m *Mux) aboutMuxSession(msg []byte) bool {
	if !bytes.HasPrefix(msg, []byte(`{"method":"Target.detachedFromTarget"`)) && !bytes.HasPrefix(msg, []byte(`{"method":"Target.attachedToTarget"`)) {
		return false
	}
	var ev struct {
		Params struct {
			SessionID  string `json:"sessionId"`
			TargetInfo struct {
				Type string `json:"type"`
			} `json:"targetInfo"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &ev) != nil {
		return false
	}
	sid := ev.Params.SessionID
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions[sid] != nil {
		return true
	}
	if m.departed[sid] {
		delete(m.departed, sid)
		return true
	}
	// The attach of a browser session comes before its answer names it;
	// chromedp never attaches to the browser target.
	return ev.Params.TargetInfo.Type == "browser"
}

// noteDetached forgets a departed client's session when Chrome says it is
// detached.
func (m *Mux) noteDetached(msg []byte) {
	if !bytes.HasPrefix(msg, []byte(`{"method":"Target.detachedFromTarget"`)) {
		return
	}
	var ev struct {
		Params struct {
			SessionID string `json:"sessionId"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &ev) == nil {
		m.mu.Lock()
		delete(m.departed, ev.Params.SessionID)
		m.mu.Unlock()
	}
}

// command is a message to Chrome.
type command struct {
	ID        int64  `json:"id"`
	SessionID string `json:"sessionId,omitempty"`
	Method    string `json:"method"`
	Params    any    `json:"params"`
}

// send writes a command of the mux's own in the background: a Chrome that
// stopped reading must not hold the caller.
func (m *Mux) send(cmd command) {
	b, err := json.Marshal(cmd)
	if err != nil {
		m.log.Error("devtools pipe: encoding a command", "method", cmd.Method, "error", err)
		return
	}
	go func() {
		if err := m.writeChrome(append(b, 0)); err != nil {
			m.log.Debug("devtools pipe: writing to chrome", "method", cmd.Method, "error", err)
		}
	}()
}

// call sends a command of the mux's own, in session sid ("" for the
// browser's root session), and returns the whole answer's result.
func (m *Mux) call(ctx context.Context, sid, method string, params any) (json.RawMessage, error) {
	if params == nil {
		params = struct{}{}
	}
	call := &muxCall{reply: make(chan []byte, 1)}
	id := m.register(call)
	m.send(command{ID: id, SessionID: sid, Method: method, Params: params})
	select {
	case msg := <-call.reply:
		var res struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(msg, &res); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if res.Error != nil {
			return nil, fmt.Errorf("%s: %s (%d)", method, res.Error.Message, res.Error.Code)
		}
		return res.Result, nil
	case <-ctx.Done():
		m.takeCall(id)
		return nil, ctx.Err()
	case <-m.done:
		return nil, ErrClosed
	}
}

// StreamCall sends a command of the mux's own in session sid and gives the
// answer, as Chrome sends it ({"id":…,"result":…}), to read as it arrives:
// Chrome's other messages wait meanwhile, so read fast. An answer the
// caller does not read whole is read away after read returns. With cbor,
// where Chrome speaks CBOR (SpeaksCBOR), the answer is Chrome's own CBOR
// map instead, never converted to JSON. A call on a closed mux fails with
// ErrClosed.
func (m *Mux) StreamCall(ctx context.Context, sid, method string, params any, cbor bool, read func(io.Reader) error) error {
	if params == nil {
		params = struct{}{}
	}
	if cbor && !m.SpeaksCBOR() {
		return errors.New("a stream call in cbor: chrome speaks JSON on this pipe")
	}
	call := &muxCall{stream: make(chan *muxStream), abandoned: make(chan struct{}), cbor: cbor}
	id := m.register(call)
	m.send(command{ID: id, SessionID: sid, Method: method, Params: params})
	select {
	case h := <-call.stream:
		defer close(h.done)
		return read(h.r)
	case <-ctx.Done():
		m.takeCall(id)
		close(call.abandoned)
		return ctx.Err()
	case <-m.done:
		return ErrClosed
	}
}

// Answers checks that Chrome's browser process is alive, past whatever
// chromedp has still to read: the mux sends a Browser.getVersion of its own
// and reads the answer itself. The answer comes after every message Chrome
// queued before it, so during a flood of events it can take longer than ctx
// allows; but Chrome that sends anything meanwhile is alive (a frozen one
// sends nothing), and so is one whose messages wait for pagemux to read
// them (chromedp not reading its end, or pagemux's reader not yet run).
// Answers returns nil as soon as it knows Chrome is alive, and an error
// only when nothing came from Chrome for as long as ctx lasted (ErrClosed
// when its pipe closed). It does not tell a hung page from a live one.
func (m *Mux) Answers(ctx context.Context) error {
	start := time.Now()
	call := &muxCall{reply: make(chan []byte, 1)}
	id := m.register(call)
	defer m.takeCall(id)
	m.send(command{ID: id, Method: "Browser.getVersion", Params: struct{}{}})
	// Chrome gives no sign of the bytes it sends but the bytes: a
	// timestamp the reader keeps, looked at now and then.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-call.reply:
			return nil // an error answer comes from a live browser too
		case <-m.done:
			return ErrClosed
		case <-tick.C:
			if m.alive(start) {
				return nil
			}
		case <-ctx.Done():
			if m.alive(start) || m.Pending() > 0 {
				return nil
			}
			return fmt.Errorf("chrome sent nothing on its pipe for %s, not even the answer to a Browser.getVersion of pagemux's own", time.Since(start).Round(time.Millisecond))
		}
	}
}

// alive reports whether Chrome sent bytes since start, or pagemux's reader
// waits on a consumer of what Chrome sent (so Chrome's next bytes wait for
// pagemux, not for Chrome).
func (m *Mux) alive(start time.Time) bool {
	if time.Unix(0, m.lastFromChrome.Load()).After(start) {
		m.log.Debug("devtools pipe: chrome sends, though its answer has not come yet")
		return true
	}
	for _, busy := range []*atomic.Int64{&m.busySince, &m.divertBusySince} {
		if since := busy.Load(); since != 0 && !m.readingChrome.Load() {
			m.log.Debug("devtools pipe: chrome's messages wait for pagemux to read them", "for", time.Since(time.Unix(0, since)))
			return true
		}
	}
	return false
}

// Drained is when chromedp last took bytes from its end of the pipe: a
// backlog that drains moves it on, one stuck in chromedp does not.
func (m *Mux) Drained() time.Time {
	return time.Unix(0, m.lastToCDP.Load())
}

// QuietFor is how long Chrome has sent nothing on its pipe.
func (m *Mux) QuietFor() time.Duration {
	return time.Since(time.Unix(0, m.lastFromChrome.Load()))
}

// Pending returns how many bytes Chrome sent that wait in its pipe for the
// mux to read them (its reader was not scheduled, on a starved machine);
// 0 when it cannot tell, as off Linux.
func (m *Mux) Pending() int { return pipePending(m.fromChrome) }

// muxClient is an extra client with a browser session of its own.
type muxClient struct {
	m       *Mux
	session string // its browser session

	mu       sync.Mutex
	queue    [][]byte
	queued   int
	closed   bool
	wake     chan struct{}
	gone     chan struct{}
	sessions map[string]bool // its sessions, the browser session included
}

// newClient attaches a browser session for a new extra client.
func (m *Mux) newClient(ctx context.Context) (*muxClient, error) {
	res, err := m.call(ctx, "", "Target.attachToBrowserTarget", nil)
	if err != nil {
		return nil, err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &att); err != nil || att.SessionID == "" {
		return nil, fmt.Errorf("Target.attachToBrowserTarget gave no session: %s", res)
	}
	c := &muxClient{m: m, session: att.SessionID, wake: make(chan struct{}, 1), gone: make(chan struct{}), sessions: map[string]bool{att.SessionID: true}}
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.done:
		return nil, ErrClosed
	default:
	}
	m.sessions[c.session] = c
	m.clients[c] = true
	return c, nil
}

// addSession routes a session that c made to c.
func (c *muxClient) addSession(sid string) {
	if sid == "" {
		return
	}
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.m.clients[c] {
		c.m.sessions[sid] = c
		c.mu.Lock()
		c.sessions[sid] = true
		c.mu.Unlock()
	}
}

func (c *muxClient) dropSession(sid string) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.m.sessions[sid] == c {
		delete(c.m.sessions, sid)
	}
	c.mu.Lock()
	delete(c.sessions, sid)
	c.mu.Unlock()
}

func (c *muxClient) owns(sid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[sid]
}

// Send forwards one message of the client to Chrome: its id moves into the
// mux's range, and a message without a session goes to the client's
// browser session. A message for a session that is not the client's gets an
// error answer, as Chrome gives for an unknown session.
func (c *muxClient) Send(data []byte) error {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(data, &msg); err != nil {
		return fmt.Errorf("not a protocol message: %w", err)
	}
	origID := msg["id"]
	var id int64
	if err := json.Unmarshal(origID, &id); err != nil {
		return fmt.Errorf("a message without a numeric id: %s", origID)
	}
	sid := c.session
	if raw, ok := msg["sessionId"]; ok {
		if err := json.Unmarshal(raw, &sid); err != nil {
			return fmt.Errorf("bad sessionId %s", raw)
		}
		if !c.owns(sid) {
			c.push([]byte(fmt.Sprintf(`{"id":%s,"error":{"code":-32001,"message":"Session with given id not found."},"sessionId":%s}`, origID, raw)))
			return nil
		}
	}
	mid := c.m.register(&muxCall{client: c, origID: origID})
	msg["id"], _ = json.Marshal(mid)
	msg["sessionId"], _ = json.Marshal(sid)
	b, err := json.Marshal(msg)
	if err != nil {
		c.m.takeCall(mid)
		return err
	}
	return c.m.writeChrome(append(b, 0))
}

// answer gives the client the answer to one of its commands.
func (c *muxClient) answer(origID json.RawMessage, data []byte) {
	var msg map[string]json.RawMessage
	if json.Unmarshal(data, &msg) != nil {
		return
	}
	msg["id"] = origID
	var sid string
	_ = json.Unmarshal(msg["sessionId"], &sid)
	if sid == c.session {
		delete(msg, "sessionId")
	}
	var res struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(msg["result"], &res) == nil {
		c.addSession(res.SessionID) // attachToTarget, attachToBrowserTarget
	}
	c.pushMsg(msg)
}

// event gives the client an event of session sid, one of its own.
func (c *muxClient) event(sid string, data []byte) {
	var msg map[string]json.RawMessage
	if json.Unmarshal(data, &msg) != nil {
		return
	}
	var method string
	_ = json.Unmarshal(msg["method"], &method)
	switch method {
	case "Target.attachedToTarget", "Target.detachedFromTarget":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(msg["params"], &p) == nil {
			if method == "Target.attachedToTarget" {
				c.addSession(p.SessionID)
			} else {
				c.dropSession(p.SessionID)
			}
		}
	}
	if sid == c.session {
		delete(msg, "sessionId")
	}
	c.pushMsg(msg)
}

func (c *muxClient) pushMsg(msg map[string]json.RawMessage) {
	b, err := json.Marshal(msg)
	if err == nil {
		c.push(b)
	}
}

// push queues a message for the client; a client that lets too much pile up
// is dropped.
func (c *muxClient) push(b []byte) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.queue = append(c.queue, b)
	c.queued += len(b)
	over := c.queued > muxClientQueueCap
	c.mu.Unlock()
	if over {
		c.m.log.Warn("devtools bridge: a client did not read what chrome sent it; dropping it", "queued", c.queued)
		c.Close()
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Next returns the next message for the client, waiting for one; false
// when the client or the mux closed.
func (c *muxClient) Next(ctx context.Context) ([]byte, bool) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, false
		}
		if len(c.queue) > 0 {
			b := c.queue[0]
			c.queue[0] = nil
			c.queue = c.queue[1:]
			c.queued -= len(b)
			c.mu.Unlock()
			return b, true
		}
		c.mu.Unlock()
		select {
		case <-c.wake:
		case <-c.gone:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// shut marks the client closed.
func (c *muxClient) shut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.closed = true
	c.queue = nil
	close(c.gone)
	return true
}

// Gone is closed when the client is closed.
func (c *muxClient) Gone() <-chan struct{} { return c.gone }

// Close drops the client and detaches its browser session, which ends its
// child sessions and whatever it set on the browser (discovery,
// auto-attach). Events still on their way for its sessions are dropped.
func (c *muxClient) Close() {
	if !c.shut() {
		return
	}
	m := c.m
	m.mu.Lock()
	delete(m.clients, c)
	c.mu.Lock()
	for sid := range c.sessions {
		if m.sessions[sid] == c {
			delete(m.sessions, sid)
		}
		m.departed[sid] = true
	}
	c.mu.Unlock()
	m.mu.Unlock()
	select {
	case <-m.done:
		return
	default:
	}
	// Answers to its commands still on their way are read away (no call
	// waits for them any more, see readChrome).
	m.mu.Lock()
	for id, call := range m.calls {
		if call.client == c {
			delete(m.calls, id)
		}
	}
	m.mu.Unlock()
	m.send(command{ID: m.register(&muxCall{reply: make(chan []byte, 1)}), Method: "Target.detachFromTarget", Params: map[string]string{"sessionId": c.session}})
}

// ClientCount is the number of extra clients (bridge connections)
// connected now.
func (m *Mux) ClientCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.clients)
}
