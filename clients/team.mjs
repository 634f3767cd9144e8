// team.mjs: a lead agent and three subagents share one pagemux, as a new
// user would set them up, with the official MCP TypeScript SDK (a client
// pagemux did not write). Usage:
//   node team.mjs SITE_URL SERVER_URL LEAD_SECRET PAGEMUX SUB_SECRET
// The lead speaks Streamable HTTP to SERVER_URL (…/mcp); each subagent
// starts its own `PAGEMUX --join SERVER_URL --auth-token SUB_SECRET`, all
// three on one token. It checks that each agent sees only its own tab and
// its own document, that one subagent's long call does not hold up the
// others, that nobody may touch another's page, and that /locks (the lead's
// token is an --admin-token, which sees every agent's calls) and /metrics
// show what happened. It prints one JSON line and exits 1 on the
// first broken promise, naming it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [site, serverURL, leadSecret, command, subSecret] = process.argv.slice(2);
if (!subSecret) {
  console.error("usage: node team.mjs SITE_URL SERVER_URL LEAD_SECRET PAGEMUX SUB_SECRET");
  process.exit(2);
}

function fail(msg) {
  console.error("FAIL: " + msg);
  process.exit(1);
}

const text = (r) => r.content.map((c) => c.text ?? "").join("");

async function connect(name, transport) {
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(transport);
  return { name, client };
}

const auth = { Authorization: "Bearer " + leadSecret };
const lead = await connect("lead", new StreamableHTTPClientTransport(new URL(serverURL), { requestInit: { headers: auth } }));
const subs = await Promise.all(
  [1, 2, 3].map((i) =>
    connect(`sub${i}`, new StdioClientTransport({ command, args: ["--join", serverURL, "--auth-token", subSecret, "--log-level=error"], stderr: "inherit" })),
  ),
);
const team = [lead, ...subs];

async function call(agent, name, args = {}) {
  const r = await agent.client.callTool({ name, arguments: args });
  return { text: text(r), isError: !!r.isError, at: Date.now() };
}

async function must(agent, name, args) {
  const r = await call(agent, name, args);
  if (r.isError) fail(`${agent.name} ${name}: ${r.text}`);
  return r;
}

// 1. Each agent opens its own tab, all at once.
await Promise.all(
  team.map(async (a) => {
    const r = await must(a, "new_page", { url: `${site}/form.html?agent=${a.name}` });
    const m = /^(\d+): .*\[selected\]$/m.exec(r.text);
    if (!m) fail(`${a.name}: new_page selected nothing: ${r.text}`);
    a.page = Number(m[1]);
  }),
);

// 2. Each sees only its own tab.
for (const a of team) {
  const list = (await must(a, "list_pages")).text;
  const tabs = list.split("\n").filter((l) => /^\d+: /.test(l));
  if (tabs.length !== 1 || !tabs[0].startsWith(`${a.page}: `) || !tabs[0].includes(`agent=${a.name}`)) {
    fail(`${a.name} sees the tabs:\n${list}`);
  }
}

// 3. All navigate and read their own document, at once; no answer shows
// another agent's document.
let leaks = 0;
const rounds = Number(process.env.TEAM_ROUNDS || 10); // the Go test sizes it with internal/soak
await Promise.all(
  team.map(async (a) => {
    for (let i = 0; i < rounds; i++) {
      await must(a, "navigate_page", { url: `${site}/page2.html?agent=${a.name}&step=${i}` });
      const r = await must(a, "evaluate_script", { function: "() => location.search" });
      if (!r.text.includes(`agent=${a.name}&step=${i}`)) leaks++;
      const snap = await must(a, "take_snapshot");
      if (!snap.text.includes("RootWebArea")) fail(`${a.name}: no snapshot: ${snap.text}`);
    }
  }),
);
if (leaks) fail(`${leaks} answers showed another agent's document`);

// 4. Nobody may use another's page.
for (const [a, b] of [[subs[0], lead], [lead, subs[1]], [subs[2], subs[0]]]) {
  const r = await call(a, "evaluate_script", { pageId: b.page, function: "() => 1" });
  if (!r.isError || !r.text.includes("belongs to another agent")) fail(`${a.name} used ${b.name}'s page: ${r.text}`);
}

// 5. sub1's 3 s script holds up no one else: their quick calls all answer
// before it does.
const long = call(subs[0], "evaluate_script", { function: "() => new Promise(r => setTimeout(() => r('long'), 3000))" });
await new Promise((r) => setTimeout(r, 300));
const locks = await (await fetch(new URL("/locks", serverURL), { headers: auth })).json();
const quick = await Promise.all([lead, subs[1], subs[2]].map((a) => must(a, "evaluate_script", { function: "() => 'quick'" })));
const longDone = await long;
if (longDone.isError) fail("sub1's long call: " + longDone.text);
for (const [i, q] of quick.entries()) {
  if (q.at >= longDone.at) fail(`agent ${i}'s quick call waited for sub1's long one`);
}
const held = locks.find((l) => (l.holder ?? "").startsWith(`evaluate_script on page ${subs[0].page} for agent token:team/agent:join-`));
if (!held) fail("/locks while sub1's script ran: " + JSON.stringify(locks));

// 6. /metrics counts the four agents and their calls.
const metrics = await (await fetch(new URL("/metrics", serverURL), { headers: auth })).text();
const agentsLine = /^pagemux_agents (\d+)$/m.exec(metrics);
if (!agentsLine || Number(agentsLine[1]) !== 4) fail("pagemux_agents: " + (agentsLine?.[0] ?? "missing"));
const newPages = /^pagemux_tool_call_seconds_count\{outcome="ok",tool="new_page"\} (\d+)$/m.exec(metrics);
if (!newPages || Number(newPages[1]) !== 4) fail("new_page calls in /metrics: " + (newPages?.[0] ?? "missing"));

for (const a of team) await a.client.close();
console.log(JSON.stringify({ ok: true, agents: team.length, rounds, leaks, locks: locks.length }));
