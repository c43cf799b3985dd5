/**
 * The console's script, plain ES2020 run as is by the browser (no bundle, no framework). It
 * speaks only to the admin routes, at URLs relative to the page's own path, and builds the DOM
 * with `textContent` (instance data never becomes markup); the one markup it inserts is the
 * machine's diagram, drawn by `generate` from the definition.
 *
 * Views, chosen by the URL's hash: `#/<machine>` the instance list, `#/<machine>/<id>` one
 * instance, live through its admin state stream.
 */
export const CONSOLE_SCRIPT = String.raw`
'use strict';
const base = location.pathname.replace(/\/console\/?$/, '');
const api = base + '/api/machines';
const $ = (id) => document.getElementById(id);
const view = { machines: [], machine: null, id: null, cursor: null, historyCursor: null, source: null, record: null };
let stream = null;

function el(tag, props, children) {
  const node = document.createElement(tag);
  Object.assign(node, props || {});
  for (const child of children || []) node.append(child instanceof Node ? child : String(child));
  return node;
}
function notice(text) { $('notice').textContent = text || ''; }
function when(iso) { return iso ? new Date(iso).toLocaleString() : '-'; }
function short(state) { const dot = state.indexOf('.'); return dot < 0 ? state : state.slice(dot + 1); }

async function call(path, options) {
  const response = await fetch(api + path, Object.assign({ headers: { accept: 'application/json' } }, options || {}));
  const body = response.headers.get('content-type')?.includes('json') ? await response.json() : await response.text();
  if (!response.ok) throw new Error(response.status + ': ' + ((body && body.message) || body || response.statusText));
  return body;
}
function machine() { return view.machines.find((m) => m.id === view.machine); }
function encode(value) { return encodeURIComponent(value); }

async function start() {
  $('who').value = localStorage.getItem('mr-console-who') || 'console';
  $('who').addEventListener('change', () => localStorage.setItem('mr-console-who', $('who').value));
  try {
    view.machines = (await call('')).machines;
  } catch (error) { notice('Cannot load the machines: ' + error.message); return; }
  for (const m of view.machines) $('machine').append(el('option', { value: m.id, textContent: m.id }));
  $('machine').addEventListener('change', () => { location.hash = '#/' + encode($('machine').value); });
  $('state-filter').addEventListener('change', () => loadList(false));
  $('status-filter').addEventListener('change', () => loadList(false));
  $('search-form').addEventListener('submit', (event) => { event.preventDefault(); search(); });
  $('more').addEventListener('click', () => loadList(true));
  $('more-history').addEventListener('click', () => loadTimeline(true));
  $('show-internal').addEventListener('change', () => loadTimeline(false));
  $('back').addEventListener('click', (event) => { event.preventDefault(); location.hash = '#/' + encode(view.machine); });
  for (const button of document.querySelectorAll('#actions button')) {
    button.addEventListener('click', () => repair(button.dataset.action, {}));
  }
  $('send-form').addEventListener('submit', (event) => { event.preventDefault(); sendEvent(); });
  addEventListener('hashchange', route);
  route();
}

async function route() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const wanted = parts[0] && view.machines.some((m) => m.id === parts[0]) ? parts[0] : view.machines[0] && view.machines[0].id;
  if (!wanted) { notice('No machine is registered.'); return; }
  if (wanted !== view.machine) { view.machine = wanted; fillStates(); }
  $('machine').value = view.machine;
  closeStream();
  notice('');
  if (parts[1]) { view.id = parts[1]; await showInstance(); }
  else { view.id = null; $('instance-view').hidden = true; $('list-view').hidden = false; await loadList(false); }
}

function fillStates() {
  const select = $('state-filter');
  select.replaceChildren(el('option', { value: '', textContent: 'any' }));
  for (const state of machine().states) {
    const depth = state.id.split('.').length - 2;
    select.append(el('option', { value: state.id, textContent: '\u00a0\u00a0'.repeat(depth) + short(state.id) }));
  }
  const send = $('send-type');
  send.replaceChildren(...machine().events.map((type) => el('option', { value: type, textContent: type })));
}

function listQuery(more) {
  const query = new URLSearchParams();
  if ($('state-filter').value) query.set('state', $('state-filter').value);
  if ($('status-filter').value) query.set('status', $('status-filter').value);
  if (view.listKey) query.set('key', view.listKey);
  if (more && view.cursor) query.set('cursor', view.cursor);
  return query.toString();
}

async function loadList(more) {
  let page;
  try { page = await call('/' + encode(view.machine) + '/instances?' + listQuery(more)); }
  catch (error) { notice(error.message); return; }
  const body = $('instances').tBodies[0];
  if (!more) body.replaceChildren();
  for (const item of page.items) {
    const link = el('a', { href: '#/' + encode(view.machine) + '/' + encode(item.id), textContent: item.id });
    const status = item.pausedAt ? el('span', { className: 'paused', textContent: 'paused' }) : item.status;
    const row = el('tr', {}, [
      el('td', {}, [link]),
      el('td', { className: 'state', textContent: item.value.map(short).join(', ') }),
      el('td', { className: 'status-' + item.status }, [status]),
      el('td', { textContent: item.businessKey || '' }),
      el('td', { textContent: when(item.updatedAt) }),
    ]);
    row.dataset.id = item.id;
    body.append(row);
  }
  view.cursor = page.nextCursor;
  $('more').hidden = !page.nextCursor;
  $('count').textContent = body.rows.length + ' shown' + (view.listKey ? ' (key ' + view.listKey + ')' : '');
}

async function search() {
  const text = $('search').value.trim();
  view.listKey = null;
  if (!text) return loadList(false);
  try {
    await call('/' + encode(view.machine) + '/instances/' + encode(text));
    location.hash = '#/' + encode(view.machine) + '/' + encode(text);
    return;
  } catch (error) {
    if (!/^404/.test(error.message)) { notice(error.message); return; }
  }
  view.listKey = text;
  await loadList(false);
}

async function showInstance() {
  $('list-view').hidden = true;
  $('instance-view').hidden = false;
  $('instance-title').textContent = view.machine + ' ' + view.id;
  await drawDiagram();
  await refresh();
  openStream();
}

async function refresh() {
  try { view.record = await call('/' + encode(view.machine) + '/instances/' + encode(view.id)); }
  catch (error) { notice(error.message); return; }
  renderRecord(view.record);
  await loadTimeline(false);
}

function renderRecord(record) {
  const i = record.instance;
  $('instance-summary').replaceChildren(
    el('strong', { id: 'current-state', textContent: i.value.map(short).join(', ') }),
    ' \u00b7 ' + i.status + (i.pausedAt ? ' \u00b7 ' : ''),
    i.pausedAt ? el('span', { className: 'paused', textContent: 'paused since ' + when(i.pausedAt) }) : '',
    ' \u00b7 sequence ' + i.sequence + ' \u00b7 created ' + when(i.createdAt) + (i.businessKey ? ' \u00b7 key ' + i.businessKey : ''),
  );
  const done = i.status === 'done';
  const enable = { cancel: !done && !!machine().cancelEvent, pause: !done && !i.pausedAt, resume: !!i.pausedAt, release: !!record.lock,
    retry: record.failedJobs.length > 0, fire: !done && record.timers.some((t) => t.dueAt && t.registered) };
  for (const button of document.querySelectorAll('#actions button')) button.disabled = !enable[button.dataset.action];
  $('send-form').querySelector('button').disabled = done;
  markCurrent(i.value);
  const lock = record.lock;
  $('lock').replaceChildren(lock
    ? el('span', { textContent: 'Held by ' + lock.ownerId + ' (' + (lock.context || '?') + ') since ' + when(lock.acquiredAt) + ', expires ' + when(lock.expiresAt) + (lock.expired ? ' (expired)' : '') })
    : el('span', { className: 'muted', textContent: 'Not locked' }));
  $('timers').replaceChildren(table(['Timer', 'Event', 'Due', 'Fired', ''], record.timers.map((t) =>
    [t.key, t.eventType, t.dueAt ? when(t.dueAt) : 'not again', String(t.fireCount) + (t.registered ? '' : ' (not registered)'),
      t.dueAt && t.registered && !done && !i.pausedAt ? actionButton('Fire now', 'fire', { timer: t.key }) : ''])));
  $('children').replaceChildren(table(['Child', 'Machine', 'Status', 'Started'], record.children.map((c) =>
    [view.machines.some((m) => m.id === c.childMachineId)
      ? el('a', { href: '#/' + encode(c.childMachineId) + '/' + encode(c.id), textContent: c.id }) : c.id,
    c.childMachineId, c.status, when(c.createdAt)])));
  $('jobs').replaceChildren(table(['Job', 'Name', 'Attempts', 'Error', ''], record.failedJobs.map((j) =>
    [j.id, j.name, String(j.attempts), j.lastError.split('\n')[0], actionButton('Retry', 'retry', { jobId: j.id })])));
  $('context').textContent = JSON.stringify(record.context, null, 2);
}

/** A button of one timer's or one job's row: the repair with that timer or job named. */
function actionButton(label, action, body) {
  const button = el('button', { textContent: label, type: 'button' });
  button.dataset.action = action;
  button.addEventListener('click', () => repair(action, body));
  return button;
}

function table(headings, rows) {
  if (rows.length === 0) return el('span', { className: 'muted', textContent: 'None' });
  return el('table', {}, [
    el('thead', {}, [el('tr', {}, headings.map((h) => el('th', { textContent: h })))]),
    el('tbody', {}, rows.map((cells) => el('tr', {}, cells.map((c) => el('td', {}, [c]))))),
  ]);
}

async function drawDiagram() {
  const figure = $('diagram');
  figure.replaceChildren();
  try {
    const response = await fetch(base + '/console/diagram/' + encode(view.machine));
    if (response.ok) { figure.innerHTML = await response.text(); return; }
  } catch (error) { /* drawn as a list below */ }
  const lists = new Map([[null, el('ul', { id: 'state-list' })]]);
  for (const state of machine().states) {
    const item = el('li', { textContent: short(state.id) });
    item.dataset.state = state.id;
    (lists.get(state.parent) || lists.get(null)).append(item);
    const nested = el('ul');
    item.append(nested);
    lists.set(state.id, nested);
  }
  figure.append(lists.get(null));
}

function markCurrent(states) {
  const figure = $('diagram');
  for (const node of figure.querySelectorAll('.mr-current')) { node.classList.remove('mr-current'); delete node.dataset.current; }
  const active = new Set();
  for (const state of states) {
    const parts = state.split('.');
    for (let n = 2; n <= parts.length; n += 1) active.add(parts.slice(0, n).join('.'));
  }
  for (const state of active) {
    const key = state.split('.').slice(1).join('_').replace(/[.*+?^$()|[\]\\{}]/g, '\\$&');
    const pattern = new RegExp('-state-' + key + '-\\d+$');
    for (const node of figure.querySelectorAll('svg g.node[id], svg g.cluster[id], svg g[id]')) {
      if (pattern.test(node.id)) { node.classList.add('mr-current'); node.dataset.current = state; }
    }
    for (const node of figure.querySelectorAll('li[data-state]')) {
      if (node.dataset.state === state) { node.classList.add('mr-current'); node.dataset.current = state; }
    }
  }
}

async function loadTimeline(more) {
  const query = new URLSearchParams({ order: 'desc', limit: '50' });
  if (!$('show-internal').checked) query.set('source', 'external');
  if (more && view.historyCursor) query.set('cursor', view.historyCursor);
  let page;
  try { page = await call('/' + encode(view.machine) + '/instances/' + encode(view.id) + '/history?' + query); }
  catch (error) { notice(error.message); return; }
  const list = $('timeline');
  if (!more) list.replaceChildren();
  for (const record of page.items) {
    const operator = (record.actor || '').startsWith('operator:');
    const item = el('li', { className: 'source-' + record.source + (operator ? ' operator' : '') }, [
      el('span', { className: 'seq muted', textContent: '#' + record.sequence + ' ' }),
      el('span', { className: 'type', textContent: record.type }),
      ' in ' + record.value.map(short).join(', '),
      el('div', { className: 'muted', textContent: when(record.createdAt) + (record.actor ? ' \u00b7 ' + record.actor : '') +
        (record.payload && Object.keys(record.payload).length ? ' \u00b7 ' + JSON.stringify(record.payload).slice(0, 160) : '') }),
    ]);
    item.dataset.sequence = String(record.sequence);
    item.dataset.type = record.type;
    list.append(item);
  }
  view.historyCursor = page.nextCursor;
  $('more-history').hidden = !page.nextCursor;
}

async function repair(action, body) {
  notice('');
  if (action === 'cancel' && !confirmCancel()) return;
  const payload = Object.assign({ who: $('who').value || 'console' }, body);
  try {
    const answer = await call('/' + encode(view.machine) + '/instances/' + encode(view.id) + '/' + action, {
      method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(payload) });
    view.record = answer.instance;
    renderRecord(answer.instance);
    await loadTimeline(false);
  } catch (error) { notice(action + ' refused: ' + error.message); }
}
function confirmCancel() { return !window.confirm || window.confirm('Cancel ' + view.id + '?'); }

function sendEvent() {
  const text = $('send-payload').value.trim();
  let payload;
  try { payload = text ? JSON.parse(text) : undefined; } catch (error) { notice('The payload is not JSON: ' + error.message); return; }
  repair('send', payload === undefined ? { type: $('send-type').value } : { type: $('send-type').value, payload });
}

function openStream() {
  if (typeof EventSource !== 'function') return;
  const source = new EventSource(api + '/' + encode(view.machine) + '/instances/' + encode(view.id) + '/stream');
  stream = source;
  source.addEventListener('open', () => { $('live').dataset.live = 'open'; $('live').textContent = 'live'; });
  source.addEventListener('state', (event) => {
    const state = JSON.parse(event.data);
    if (!view.record || state.sequence !== view.record.instance.sequence) refresh();
    // A final state is the last message: the stream ends and must not be reopened.
    if (state.status === 'done') { closeStream(); $('live').textContent = 'finished'; }
  });
  source.addEventListener('error', () => { if (stream === source) { $('live').dataset.live = 'closed'; $('live').textContent = 'reconnecting'; } });
}
function closeStream() {
  if (stream) stream.close();
  stream = null;
  $('live').dataset.live = 'closed';
  $('live').textContent = 'not live';
}

start();
`;
