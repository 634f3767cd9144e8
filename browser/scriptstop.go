package browser

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// A call that gives up on its script must stop that script, and only that:
// Runtime.terminateExecution stops whatever JavaScript runs in the renderer,
// and tabs can share a renderer (--process-per-site, pages of one site opened
// from each other, a renderer process limit). A script queued behind another
// call's busy script has not started, so terminating then would kill the
// other call's script. So evaluate_script's scripts tell pagemux, through a
// binding, when they start and when their synchronous part returns; pagemux
// terminates a script of a call that gave up only while that script runs,
// and one that had not started yet as soon as it starts. A script that
// awaits may busy the renderer again when it resumes: it is terminated when
// the renderer does not answer and no other call's script runs in the
// browser.

// scriptBinding is the binding pagemux's scripts signal through. It is a
// global of the page's main world; pages never see it called with tokens of
// their own.
const scriptBinding = "__pagemuxScript"

// scriptState is where a script of evaluate_script is.
type scriptState int

const (
	scriptQueued  scriptState = iota // sent, not started: another script runs
	scriptRunning                    // its synchronous part runs
	scriptAwaits                     // it returned a promise, or returned
)

// scriptRun is one script of evaluate_script.
type scriptRun struct {
	token     string
	state     scriptState
	abandoned bool // its call gave up; stop it when it starts
}

// scriptRuns are the scripts of a page's calls that have not ended, by token.
type scriptRuns struct {
	mu      sync.Mutex
	runs    map[string]*scriptRun
	binding atomic.Bool // the binding is added to the page's session
}

// ScriptFate is what became of a script of evaluate_script whose call gave
// up before it returned (AbandonedScriptError); 0 is none.
type ScriptFate int

const (
	// ScriptTerminated is a script that ran, whose termination Chrome
	// answered.
	ScriptTerminated ScriptFate = iota + 1
	// ScriptUnanswered is a script that ran, whose termination Chrome did
	// not answer: it may run on, and the browser is checked at once.
	ScriptUnanswered
	// ScriptNotStarted is a script that had not started: another script
	// ran in its renderer, or Chrome never ran it. It is stopped if it
	// starts.
	ScriptNotStarted
	// ScriptAwaiting is a script whose synchronous part had returned, left
	// to wait on its promise (it holds no renderer while it waits).
	ScriptAwaiting
	// ScriptUnknown is a script of a page that gives no signals of its
	// scripts (the binding could not be added): whether it runs on is not
	// known.
	ScriptUnknown
)

// Say says what became of the script, to follow "its script in page N".
func (f ScriptFate) Say() string {
	switch f {
	case ScriptTerminated:
		return "was terminated"
	case ScriptUnanswered:
		return "was to be terminated, but Chrome did not answer that: it may still run"
	case ScriptNotStarted:
		return "had not started (another script ran in its renderer, or Chrome did not run it), and is stopped if it starts"
	case ScriptAwaiting:
		return "had returned a promise, which is left to settle"
	}
	return "may still run (pagemux could not tell)"
}

// scriptForget bounds how long an abandoned script that never starts (its
// document went away meanwhile) is remembered.
const scriptForget = time.Minute

// newScriptRun registers a script about to be sent.
func (p *Page) newScriptRun(ctx context.Context) *scriptRun {
	p.ensureScriptBinding(ctx)
	var b [8]byte
	_, _ = rand.Read(b[:])
	r := &scriptRun{token: hex.EncodeToString(b[:])}
	p.scripts.mu.Lock()
	if p.scripts.runs == nil {
		p.scripts.runs = map[string]*scriptRun{}
	}
	p.scripts.runs[r.token] = r
	p.scripts.mu.Unlock()
	return r
}

// ensureScriptBinding adds the binding once per page. Without it the scripts
// run as before, and a call that gives up does not stop its script.
func (p *Page) ensureScriptBinding(ctx context.Context) {
	if p.scripts.binding.Load() || p.usable() != nil {
		return // a crashed renderer would never answer
	}
	cctx, cancel := p.Context(ctx)
	defer cancel()
	cctx, stop := context.WithTimeout(cctx, bindingTimeout)
	defer stop()
	if _, err := chromedp.Call(cctx, runtime.AddBinding, runtime.AddBindingParams{Name: scriptBinding}); err == nil {
		p.scripts.binding.Store(true)
	}
}

// bindingTimeout bounds the adding of the binding: a renderer that does not
// answer then is busy, and the script that follows would wait for it anyway.
const bindingTimeout = 2 * time.Second

// signal is the statement a script runs to tell pagemux where it is.
func (r *scriptRun) signal(what string) string {
	return "globalThis." + scriptBinding + "?.('" + what + ":" + r.token + "');"
}

// expression wraps the function declaration fn, called without arguments,
// in an expression that signals its start and the return of its
// synchronous part.
func (r *scriptRun) expression(fn string) string {
	return "(() => { " + r.signal("s") + " try { return (" + fn + "\n)(); } finally { " + r.signal("r") + " } })()"
}

// script wraps a classic script likewise. A try statement's completion
// value is its block's, so the script's value is still the program's.
func (r *scriptRun) script(src string) string {
	return r.signal("s") + "\ntry {\n" + src + "\n} finally { " + r.signal("r") + " }"
}

// declaration wraps the function declaration fn, called on an object with
// arguments, likewise. fn is compiled outside the wrapper, in the global
// scope, so an arrow function still sees the window as this.
func (r *scriptRun) declaration(fn string) string {
	return "(f => function(...args) { " + r.signal("s") + " try { return f.apply(this, args); } finally { " + r.signal("r") + " } })(" + fn + "\n)"
}

// scriptEvent follows the signals of the page's scripts. It runs in the
// page's event loop, so it sends no command itself.
func (p *Page) scriptEvent(ev *runtime.EventBindingCalled) {
	if ev.Name != scriptBinding {
		return
	}
	what, token, ok := strings.Cut(ev.Payload, ":")
	if !ok {
		return
	}
	p.scripts.mu.Lock()
	defer p.scripts.mu.Unlock()
	r := p.scripts.runs[token]
	if r == nil {
		return
	}
	switch what {
	case "s":
		if r.abandoned {
			delete(p.scripts.runs, token)
			go p.terminate() // it runs now, and nobody waits for it
			return
		}
		p.setScriptState(r, scriptRunning)
	case "r":
		p.setScriptState(r, scriptAwaits)
		if r.abandoned {
			delete(p.scripts.runs, token)
		}
	}
}

// setScriptState moves r to state, keeping the browser's count of running
// scripts. Call it holding p.scripts.mu.
func (p *Page) setScriptState(r *scriptRun, state scriptState) {
	if r.state == scriptRunning {
		p.b.scriptsRunning.Add(-1)
	}
	if state == scriptRunning {
		p.b.scriptsRunning.Add(1)
	}
	r.state = state
}

// endScript forgets a script whose call got its answer, or stops it when
// the call gave up: at once while it runs, when it starts if it is still
// queued behind another script, and once its synchronous part returned only
// if the renderer is busy and no other call's script runs (see
// stopAwaiting). It returns what became of a script whose call gave up.
func (p *Page) endScript(r *scriptRun, gaveUp bool) ScriptFate {
	p.scripts.mu.Lock()
	state := r.state
	switch {
	case !gaveUp || state != scriptQueued:
		p.setScriptState(r, scriptAwaits)
		delete(p.scripts.runs, r.token)
	default:
		r.abandoned = true
		time.AfterFunc(scriptForget, func() {
			p.scripts.mu.Lock()
			delete(p.scripts.runs, r.token)
			p.scripts.mu.Unlock()
		})
	}
	p.scripts.mu.Unlock()
	switch {
	case !gaveUp:
		return 0
	case state == scriptRunning:
		return p.terminate()
	case state == scriptAwaits:
		return p.stopAwaiting()
	case !p.scripts.binding.Load():
		return ScriptUnknown
	}
	return ScriptNotStarted
}

// busyProbe bounds the check whether a renderer runs JavaScript: an idle
// one answers in a millisecond.
const busyProbe = 300 * time.Millisecond

// stopAwaiting terminates what runs in the page's renderer after a call
// whose script awaited gave up, when the renderer does not answer (so
// JavaScript runs there: most likely that script, resumed) and no other
// call's script runs anywhere in the browser (it could be the one running).
func (p *Page) stopAwaiting() ScriptFate {
	if p.Closed() || p.usable() != nil {
		return ScriptAwaiting
	}
	ctx, cancel := context.WithTimeout(p.ctx, busyProbe)
	_, err := evaluate(ctx, "0")
	cancel()
	if err == nil || p.b.scriptsRunning.Load() > 0 {
		return ScriptAwaiting
	}
	return p.terminate()
}

// terminateTimeout bounds a termination: a renderer answers it whatever
// its JavaScript does, so one that does not answer within it may be frozen.
const terminateTimeout = time.Second

// terminate stops the JavaScript that runs in the page's renderer now, and
// says whether Chrome answered. When it did not, the browser is checked at
// once instead of at the watch's next round: the call that gave up is about
// to say what became of its script, and the next call should not go to a
// frozen Chrome.
func (p *Page) terminate() ScriptFate {
	if p.Closed() {
		return ScriptUnanswered
	}
	ctx, cancel := context.WithTimeout(p.ctx, terminateTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, runtime.TerminateExecution, cdp.Empty{}); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && p.launch.health() == nil {
			p.b.log.Warn("chrome did not answer the termination of a script; checking it", "page", p.ID)
			p.b.startCheck(p.launch, true)
		}
		return ScriptUnanswered
	}
	return ScriptTerminated
}
