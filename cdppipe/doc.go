// Package cdppipe is the DevTools pipe of a Chrome that pagemux launches,
// shared: a multiplexer between chromedp and Chrome's pipe, so that several
// connections talk to one Chrome over it (Mux); a bridge that serves it to
// other DevTools clients, such as Lighthouse, as a websocket endpoint on
// loopback (Bridge); and the CBOR boundary, where Chrome's CBOR becomes the
// JSON everything on pagemux's side reads (package cdpcbor does the
// converting). It also holds the small websocket client with which
// pagemux streams an answer from an attached Chrome's endpoint (WSConn).
//
// A Chrome that pagemux launches speaks DevTools over its pipe only, and
// opens no port: any page could reach a port on loopback and take the whole
// browser with it (issue 15). Whatever else needs the protocol (Lighthouse,
// the streamed snapshot, the watchdog's own check) goes through the Mux,
// which sits between chromedp and Chrome's pipe:
//
//	chromedp ⇄ Mux ⇄ Chrome
//	            ⇅
//	   extra clients (the bridge, in-process calls)
//
// chromedp's messages go to Chrome unchanged, and Chrome's messages come
// back to chromedp unchanged unless they belong to an extra client. An extra
// client's command ids are moved into a range chromedp never reaches
// (muxIDBase and up; Chrome reads ids as 32-bit ints) and mapped back on the
// answer. Each bridge client gets a browser session of its own
// (Target.attachToBrowserTarget), so that what it sets on the browser
// (discovery, auto-attach with waitForDebuggerOnStart) never touches
// chromedp's root session, and ends when the client goes: pagemux detaches
// that session, and Chrome drops its state and its child sessions with it.
//
// Chrome speaks CBOR on the pipe when Options.CBOR says so: everything on
// pagemux's side of the mux is JSON all the same, converted at the edge
// (package cdpcbor); only a streamed answer asked for in CBOR (the
// snapshot's tree) reaches its reader as Chrome sent it (divert).
//
// The Mux does not authenticate anyone: whoever holds an extra client holds
// the browser. The bridge (bridge.go) decides who gets one.
//
// The package launches nothing and knows no page: package browser starts
// Chrome, puts a Mux in its pipe (Interpose) and calls through it.
package cdppipe
