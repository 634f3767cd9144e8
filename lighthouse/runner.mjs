// runner.mjs runs Lighthouse against one tab of a running Chrome, for pagemux.
//
// pagemux (lighthouse/lighthouse.go) starts it as `node runner.mjs`, writes a
// JSON request a line on stdin and reads JSON lines from stdout; the audits
// run one after another, each answered by its done or error line, and the
// runner exits at the end of stdin (lighthouse/worker.go). After an error it
// exits at once, so that no state of a failed audit meets the next one:
//
//   request:  {"endpoint": "http://127.0.0.1:PORT" | "ws://…/devtools/browser/…",
//              "targetId": "…", "mode": "navigation" | "snapshot",
//              "device": "desktop" | "mobile", "categories": ["accessibility", …],
//              "jsonPath": "…/report.json", "htmlPath": "…/report.html",
//              "maxWaitForLoad": 30000}
//   progress: {"progress": "Getting artifact: Accessibility"}
//   end:      {"done": {"url": "…"}}  or  {"error": "…"}
//
// It works on the tab it is given and on no other: puppeteer meets the other
// tabs only to let go of them at once, and enables nothing in them. It does not
// open a tab, does not wipe the browser's cache or storage
// (disableStorageReset), and throttles nothing for real (throttlingMethod
// "simulate"). A navigation still loads cold, as Lighthouse's reset would
// have it: the tab alone ignores the cache while it is audited (coldLoads). The screen and user agent emulation Lighthouse sets lives in its
// own DevTools session on the tab; it is cleared below, and again by Chrome
// when that session detaches.
import fs from 'node:fs/promises';
import readline from 'node:readline';
import {navigation, snapshot} from 'lighthouse';
import desktopConfig from 'lighthouse/core/config/desktop-config.js';
import log from 'lighthouse-logger';
import puppeteer from 'puppeteer-core';

const emit = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');

// requests yields the requests written on stdin, a JSON object a line.
async function* requests() {
  const lines = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
  for await (const line of lines) {
    if (line.trim()) yield JSON.parse(line);
  }
}

// options turns the request into Lighthouse's config and flags. The device
// settings (form factor, screen, user agent) are Lighthouse's own: its
// desktop preset, or its default mobile config.
function options(req) {
  const config = req.device === 'desktop' ? desktopConfig : undefined;
  const flags = {
    onlyCategories: req.categories,
    output: ['json', 'html'],
    maxWaitForLoad: req.maxWaitForLoad || 30_000,
    // Performance is scored from a simulation of the throttled load; nothing
    // is slowed down for real.
    throttlingMethod: 'simulate',
    // Lighthouse's storage reset clears the whole browser's disk cache, which
    // every tab shares.
    disableStorageReset: true,
    logLevel: 'info',
  };
  return {config, flags};
}

// connect attaches to the browser, keeping to the one target: puppeteer would
// otherwise attach to every tab and enable domains in each.
async function connect(req) {
  const only = (target) => {
    const info = target._getTargetInfo();
    switch (info.type) {
      case 'page':
        return info.targetId === req.targetId;
      case 'tab':
        // The container of a page: puppeteer reaches pages through their
        // tabs, and lets go of the tabs whose page the filter refuses.
        return true;
      case 'iframe':
      case 'worker':
        // Reached only through the audited page's own session.
        return true;
      default:
        // The browser's own UI, service and shared workers of other pages.
        return false;
    }
  };
  const endpoint = req.endpoint.startsWith('ws')
    ? {browserWSEndpoint: req.endpoint}
    : {browserURL: req.endpoint};
  return puppeteer.connect({...endpoint, defaultViewport: null, targetFilter: only, protocolTimeout: 120_000});
}

async function findPage(browser, targetId) {
  const target = await browser.waitForTarget((t) => t._getTargetInfo().targetId === targetId, {timeout: 10_000})
    .catch(() => null);
  const page = target && await target.page();
  if (!page) throw new Error(`no tab with target id ${targetId} in the browser`);
  return page;
}

// coldLoads makes the tab ignore the HTTP cache, as DevTools' "Disable
// cache" does, until the returned func: a navigation audit then measures
// what a first visit loads (transfer sizes, the simulated timings), as it
// did with the cache reset that disableStorageReset skips, and the other
// tabs keep their cache. The setting lives on a session of its own, which
// Lighthouse's own Network commands leave alone.
async function coldLoads(page) {
  const s = await page.createCDPSession();
  await s.send('Network.enable');
  await s.send('Network.setCacheDisabled', {cacheDisabled: true});
  return async () => {
    await s.send('Network.setCacheDisabled', {cacheDisabled: false}).catch(() => {});
    await s.detach().catch(() => {});
  };
}

// undoEmulation clears what Lighthouse set on the tab, so that the page looks
// as before to the next call. Chrome also drops it when the session detaches.
async function undoEmulation(page) {
  const s = await page.createCDPSession();
  try {
    await Promise.allSettled([
      s.send('Emulation.clearDeviceMetricsOverride'),
      s.send('Emulation.setCPUThrottlingRate', {rate: 1}),
      s.send('Emulation.setTouchEmulationEnabled', {enabled: false}),
      s.send('Network.emulateNetworkConditions', {offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1}),
    ]);
  } finally {
    await s.detach().catch(() => {});
  }
}

// audit runs one request and returns the URL Lighthouse audited.
async function audit(req) {
  const browser = await connect(req);
  try {
    const page = await findPage(browser, req.targetId);
    let result;
    try {
      const opts = options(req);
      if (req.mode === 'snapshot') {
        result = await snapshot(page, opts);
      } else {
        const warm = await coldLoads(page);
        try {
          result = await navigation(page, page.url(), opts);
        } finally {
          await warm();
        }
      }
    } finally {
      await undoEmulation(page).catch(() => {});
    }
    if (!result) throw new Error('Lighthouse returned no result');
    const [json, html] = result.report;
    await Promise.all([fs.writeFile(req.jsonPath, json), fs.writeFile(req.htmlPath, html)]);
    return result.lhr.finalDisplayedUrl;
  } finally {
    await browser.disconnect().catch(() => {});
  }
}

async function main() {
  log.setLevel('info');
  log.events.on('status', ([, message]) => emit({progress: message}));
  for await (const req of requests()) {
    emit({done: {url: await audit(req)}});
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    emit({error: String(err?.message || err)});
    process.exit(1);
  },
);
