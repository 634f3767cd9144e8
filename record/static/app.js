// The records page: the list of records the caller may see, and one record
// stepped through with a scrubber (#ID in the address opens it; #ID/N at
// step N). Everything a record holds is shown as text, never as HTML.
'use strict';

const $ = (id) => document.getElementById(id);
let current = null; // {meta, steps}

async function getJSON(path) {
  const res = await fetch(path, {cache: 'no-store'});
  if (!res.ok) throw new Error(path + ': ' + res.status + ' ' + (await res.text()));
  return res.json();
}

async function getText(path) {
  const res = await fetch(path, {cache: 'no-store'});
  return res.ok ? res.text() : '(' + res.status + ') ' + (await res.text());
}

function label(m) {
  return m.token ? m.token + (m.agent && m.agent.includes('agent:') ? ' / ' + m.agent.split('agent:')[1] : '') : (m.agent || 'stdio');
}

async function showList() {
  const list = await getJSON('api/records');
  const ul = $('records');
  ul.replaceChildren();
  $('none').hidden = list.length > 0;
  for (const m of list) {
    const a = document.createElement('a');
    a.href = '#' + m.id;
    a.dataset.id = m.id;
    a.textContent = label(m);
    const small = document.createElement('small');
    small.textContent = new Date(m.started).toLocaleString();
    a.append(small);
    const li = document.createElement('li');
    li.append(a);
    ul.append(li);
  }
}

async function openRecord(id, n) {
  if (!current || current.meta.id !== id) {
    current = await getJSON('api/records/' + encodeURIComponent(id));
    $('title').textContent = label(current.meta) + ' — ' + new Date(current.meta.started).toLocaleString();
    const sc = $('scrubber');
    sc.max = Math.max(1, current.steps.length);
    const ol = $('steps');
    ol.replaceChildren();
    current.steps.forEach((s, i) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = s.stopped ? 'stopped' : s.n + ' ' + s.tool;
      if (s.outcome && s.outcome !== 'ok' || s.stopped) b.classList.add('error');
      if (s.snapshot || s.screenshot) b.classList.add('action');
      b.addEventListener('click', () => go(i + 1));
      const li = document.createElement('li');
      li.append(b);
      ol.append(li);
    });
  }
  for (const a of document.querySelectorAll('#records a')) a.setAttribute('aria-current', String(a.dataset.id === id));
  $('record').hidden = false;
  showStep(Math.min(Math.max(1, n || 1), current.steps.length));
}

function go(n) {
  location.hash = current.meta.id + '/' + n;
}

function fact(dl, name, value) {
  if (value === undefined || value === null || value === '') return;
  const dt = document.createElement('dt');
  dt.textContent = name;
  const dd = document.createElement('dd');
  dd.textContent = value;
  dl.append(dt, dd);
}

async function showStep(n) {
  const steps = current.steps;
  $('scrubber').value = n;
  $('position').textContent = steps.length ? n + ' of ' + steps.length : 'no steps';
  document.querySelectorAll('#steps button').forEach((b, i) => b.setAttribute('aria-current', String(i + 1 === n)));
  const s = steps[n - 1];
  if (!s) return;
  const id = encodeURIComponent(current.meta.id);
  $('call').textContent = s.stopped ? 'The record stopped' : 'Step ' + s.n + ': ' + s.tool + ' (' + s.outcome + ')';
  const dl = $('facts');
  dl.replaceChildren();
  fact(dl, 'page', s.page);
  fact(dl, 'URL', s.url);
  fact(dl, 'title', s.title);
  fact(dl, 'arrived', s.arrived && new Date(s.arrived).toLocaleTimeString());
  fact(dl, 'waited for locks', s.waitedMs !== undefined && s.waitedMs.toFixed(1) + ' ms');
  fact(dl, 'took', s.tookMs !== undefined && s.tookMs.toFixed(1) + ' ms');
  fact(dl, 'locks', (s.locks || []).join(', '));
  fact(dl, 'selectors', (s.selectors || []).join(' | '));
  $('note').hidden = !(s.note || s.stopped);
  $('note').textContent = s.stopped || s.note || '';
  $('args').textContent = s.args ? JSON.stringify(s.args, null, 2) : '';
  $('answer').textContent = s.answer || '';
  $('shot').hidden = !s.screenshot;
  if (s.screenshot) $('screenshot').src = 'files/' + id + '/' + s.screenshot;
  $('snapshot').textContent = s.snapshot ? await getText('files/' + id + '/' + s.snapshot) : '';
  $('diff').textContent = s.snapshot ? await getText('api/records/' + id + '/diff/' + s.n) : '(no snapshot at this step)';
  document.body.dataset.step = String(n); // tests wait for it
}

async function route() {
  const [id, n] = location.hash.slice(1).split('/');
  if (id) await openRecord(decodeURIComponent(id), Number(n) || 1);
}

$('scrubber').addEventListener('input', (e) => go(Number(e.target.value)));
$('prev').addEventListener('click', () => current && go(Math.max(1, Number($('scrubber').value) - 1)));
$('next').addEventListener('click', () => current && go(Math.min(current.steps.length, Number($('scrubber').value) + 1)));
document.addEventListener('keydown', (e) => {
  if (!current || e.target.tagName === 'INPUT' && e.target.type !== 'range') return;
  if (e.key === 'ArrowLeft') $('prev').click();
  if (e.key === 'ArrowRight') $('next').click();
});
window.addEventListener('hashchange', () => route().catch(showError));

function showError(err) {
  $('none').hidden = false;
  $('none').textContent = String(err.message || err);
}

showList().then(route).catch(showError);
