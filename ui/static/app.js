// pagemux live view: renders each state the server pushes on /ui/events.
// Every text from the server goes in with textContent: page titles and URLs
// are the pages' own, written by whoever made the site.
"use strict";

const SPAN_MS = 60000;     // the timeline shows at most the last minute
const MIN_SPAN_MS = 10000; // and at least ten seconds
const ROW_PX = 22;         // one row of bars
let last = null;       // the latest state
let skew = 0;          // server clock minus ours, ms

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = String(text);
  return e;
}

// colour gives each agent a hue of its own, the same on every render.
function colour(agent) {
  let h = 0;
  for (const c of agent) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return `hsl(${h % 360} 62% 42%)`;
}

function swatch(agent) {
  const s = el("span", "swatch");
  s.style.background = colour(agent);
  return s;
}

function fill(tbody, rows, empty, cols) {
  tbody.replaceChildren();
  if (rows.length === 0) {
    const tr = el("tr"), td = el("td", "empty", empty);
    td.colSpan = cols;
    tr.append(td);
    tbody.append(tr);
  }
  for (const r of rows) tbody.append(r);
}

function renderAgents(st) {
  const rows = st.agents.map(a => {
    const tr = el("tr");
    tr.dataset.agent = a.id;
    const name = el("td");
    name.append(swatch(a.id), el("span", null, a.id));
    tr.append(name, el("td", "state-" + a.state, a.state), el("td", null, a.inFlight), el("td", null, a.calls),
      el("td", null, a.pages.length ? a.pages.join(", ") : "none"));
    return tr;
  });
  fill(document.querySelector("#agents tbody"), rows, "no agent yet", 5);
}

function renderLocks(st) {
  const rows = st.locks.filter(l => l.holder || l.waiting.length).map(l => {
    const tr = el("tr");
    tr.dataset.lock = l.lock;
    const name = el("td", null, l.lock);
    if (l.cluster) name.append(" ", el("span", "cluster", "cluster"));
    const waiting = el("td");
    for (const w of l.waiting) waiting.append(el("span", "waiter", w));
    tr.append(name, el("td", "holder", l.holder || "free"), el("td", null, l.holder ? (l.heldForMs / 1000).toFixed(1) + " s" : ""), waiting);
    return tr;
  });
  fill(document.querySelector("#locks tbody"), rows, "no lock held, no one waits", 4);
}

function renderPages(st) {
  const box = document.getElementById("pages");
  const keep = new Map([...box.children].map(c => [c.dataset.page, c]));
  box.replaceChildren();
  if (st.pages.length === 0) box.append(el("p", "empty", "no page open"));
  for (const p of st.pages) {
    let card = keep.get(String(p.id));
    if (!card) {
      card = el("div", "page");
      card.dataset.page = p.id;
      const img = el("img", "thumb");
      img.alt = "page " + p.id;
      const meta = el("div", "meta");
      meta.append(el("div", "title"), el("div", "url"), el("div", "owner"));
      card.append(img, meta);
    }
    const img = card.querySelector("img");
    if (p.thumb && img.dataset.v !== String(p.thumb)) {
      img.dataset.v = p.thumb;
      img.src = `/ui/thumb/${p.id}?v=${p.thumb}`;
    }
    card.querySelector(".title").textContent = `${p.id}: ${p.title || "(no title)"}`;
    card.querySelector(".url").textContent = p.url;
    const owner = card.querySelector(".owner");
    owner.replaceChildren();
    if (p.owner) owner.append(swatch(p.owner), el("span", null, p.owner));
    else owner.append(el("span", "empty", "no one's"));
    box.append(card);
  }
}

// span is how much of the past the timeline shows: the calls kept, at
// least MIN_SPAN_MS and at most SPAN_MS, so that a few seconds of calls
// fill the width rather than its last pixels.
function span(st, now) {
  const first = Math.min(now, ...st.calls.map(c => c.arrived));
  return Math.min(SPAN_MS, Math.max(MIN_SPAN_MS, (now - first) * 1.1));
}

// rows gives each call of a lane the first row where it overlaps no other,
// so that a wait under a hold on the same page shows beside it.
function rows(calls, now) {
  const ends = [];
  return calls.sort((a, b) => a.arrived - b.arrived).map(c => {
    let r = ends.findIndex(e => e <= c.arrived);
    if (r < 0) r = ends.length;
    ends[r] = c.ended || now;
    return [c, r];
  });
}

function renderTimeline() {
  if (!last) return;
  const st = last, now = Date.now() + skew, width = span(st, now), from = now - width;
  document.getElementById("window").textContent = Math.round(width / 1000);
  const lanes = new Map();
  for (const p of st.pages) lanes.set(p.id, []);
  for (const c of st.calls) {
    if (c.ended && c.ended < from) continue;
    if (!lanes.has(c.page || 0)) lanes.set(c.page || 0, []);
    lanes.get(c.page || 0).push(c);
  }
  const box = document.getElementById("timeline");
  box.replaceChildren();
  const pct = t => Math.max(0, (t - from) / width * 100);
  for (const [page, calls] of [...lanes].sort((a, b) => a[0] - b[0])) {
    const lane = el("div", "lane"), track = el("div", "lane-track");
    lane.dataset.page = page;
    lane.append(el("div", "lane-label", page ? "page " + page : "browser"), track);
    let height = 1;
    for (const [c, row] of rows(calls, now)) {
      height = Math.max(height, row + 1);
      const start = c.started || 0, end = c.ended || now;
      const bar = (cls, a, b, text) => {
        const d = el("div", "bar " + cls, text);
        d.style.left = pct(a) + "%";
        d.style.width = Math.max(0, pct(b) - pct(a)) + "%";
        d.style.top = row * ROW_PX + "px";
        d.style.background = colour(c.agent);
        d.title = `${c.tool} · ${c.agent} · ${c.outcome || (c.started ? "running" : "waiting")}`;
        d.dataset.call = c.id;
        track.append(d);
      };
      const held = start ? start : end;
      if (held - c.arrived > 0) bar("wait", c.arrived, held, "");
      if (start) bar("hold " + (c.outcome || "live"), start, end, c.tool);
    }
    lane.style.height = height * ROW_PX + 6 + "px";
    box.append(lane);
  }
}

function render(st) {
  last = st;
  skew = st.now - Date.now();
  document.getElementById("records").hidden = !st.records;
  const replica = document.getElementById("replica");
  replica.hidden = !st.replica;
  replica.textContent = st.replica ? "replica " + st.replica + " (cluster locks marked)" : "";
  renderAgents(st);
  renderLocks(st);
  renderPages(st);
  renderTimeline();
}

function connect() {
  const status = document.getElementById("status");
  const es = new EventSource("/ui/events");
  es.addEventListener("state", ev => {
    status.textContent = "live";
    status.className = "status live";
    render(JSON.parse(ev.data));
  });
  es.onerror = () => {
    status.textContent = "reconnecting…";
    status.className = "status down";
  };
}

setInterval(renderTimeline, 500); // in-flight bars grow between pushes
connect();
