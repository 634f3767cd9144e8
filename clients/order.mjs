// order.mjs: pagemux driven by the official MCP TypeScript SDK, a client
// pagemux did not write. Usage: node order.mjs SITE_URL PAGEMUX [FLAGS...]
//
// It checks what an agent relies on when its SDK sends tool calls in
// parallel: calls on one page run in the order the SDK wrote them, a call
// cancelled through an AbortSignal frees the page at once, and ids survive.
// It prints one JSON line with what it saw and exits 1 on the first broken
// promise, naming it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [site, command, ...args] = process.argv.slice(2);
if (!site || !command) {
  console.error("usage: node order.mjs SITE_URL PAGEMUX [FLAGS...]");
  process.exit(2);
}

function fail(msg) {
  console.error("FAIL: " + msg);
  process.exit(1);
}

function text(result) {
  return result.content.map((c) => c.text ?? "").join("");
}

function json(result) {
  const m = /```json\n([\s\S]*?)\n```/.exec(text(result));
  if (!m) fail("no json block in: " + text(result));
  return JSON.parse(m[1]);
}

const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
const client = new Client({ name: "pagemux-order-check", version: "1.0.0" });
await client.connect(transport);

const opened = await client.callTool({ name: "new_page", arguments: { url: site + "/form.html" } });
const selected = /^(\d+): .*\[selected\]$/m.exec(text(opened));
if (!selected) fail("new_page did not select the new page: " + text(opened));
const pageId = Number(selected[1]);
const evaluate = (fn, signal) =>
  client.callTool({ name: "evaluate_script", arguments: { pageId, function: fn } }, undefined, signal ? { signal } : undefined);

// 1. Bursts of parallel calls run in the order the SDK sent them: 30, or
// as many as $ORDER_BURSTS says (the Go test sizes it with internal/soak).
const bursts = Number(process.env.ORDER_BURSTS || 30);
for (let b = 0; b < bursts; b++) {
  await evaluate("() => { window.__order = []; return 0 }");
  const calls = [];
  for (let i = 0; i < 10; i++) calls.push(evaluate(`() => { window.__order.push(${i}); return ${i} }`));
  const results = await Promise.all(calls);
  results.forEach((r, i) => {
    if (r.isError || json(r) !== i) fail(`burst ${b}, call ${i}: ${text(r)}`);
  });
  const order = json(await evaluate("() => window.__order.join(',')"));
  if (order !== "0,1,2,3,4,5,6,7,8,9") fail(`burst ${b} ran in the order ${order}`);
}

// 2. A call aborted by its client frees the page: the next call answers long
// before the aborted one would have ended.
const abort = new AbortController();
const started = Date.now();
const endless = evaluate("() => new Promise(() => {})", abort.signal).then(
  () => "answered",
  (err) => "aborted: " + err.message,
);
await new Promise((r) => setTimeout(r, 300));
abort.abort("the agent moved on");
const outcome = await endless;
if (!outcome.startsWith("aborted")) fail("the aborted call " + outcome);
const after = await evaluate("() => 'free'");
if (json(after) !== "free") fail("after the abort: " + text(after));
const freedMS = Date.now() - started;

await client.close();
console.log(JSON.stringify({ ok: true, bursts, pageId, freedMS }));
