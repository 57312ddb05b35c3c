// Drover's web console: a client of the same API every other client uses, with the caller's
// own token, so it shows exactly what the API lets that caller read. Every value reaches the
// page as text (element.textContent, attributes set one by one): nothing is parsed as HTML.
// The token lives in this tab's sessionStorage only (gone with the tab, never in a URL).
// Services and their events are live through the API's watches (one stream each, resumed from
// the last version after a break); the other views re-read their one list every few seconds
// while they are shown. A refusal is shown in the words the API gave; a node that stops answering
// is said so, with the other members to go to, and what was shown before is marked stale.
'use strict';

const API = '/api/1.0-beta';
const TOKEN = 'drover.token';
const TENANT = 'drover.tenant';

const app = {
  token: sessionStorage.getItem(TOKEN),
  tenant: sessionStorage.getItem(TENANT),
  // What the current view started (timers, streams); stopped when the view changes.
  stops: [],
  view: 0,
  // The caller's role by tenant (`GET /tenant`); `operator` among them makes an operator.
  roles: {},
  // Names to show for user ids: the caller's own, and every user's for operators (`GET /user`).
  names: new Map(),
  me: null,
  // The API's words when the token's identity has not registered, else null.
  unregistered: null,
  // The members `/cluster` last listed, offered when this node stops answering.
  members: [],
  self: null,
  // Since when this node has not answered (ms since the epoch), or null.
  down: null,
};

const has = (object, key) => Object.prototype.hasOwnProperty.call(object || {}, key);
const isOperator = () => has(app.roles, 'operator');

// ---- DOM, by construction ------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') el.textContent = String(value);
    else if (key === 'class') el.className = value;
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  // Children may be nested arrays (a list of [badge, text] pairs): flattened to any depth.
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === 'text') el.textContent = String(value);
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) if (child) el.append(child);
  return el;
}

function table(headers, rows) {
  return h('table', {},
    h('thead', {}, h('tr', {}, headers.map((title) => h('th', { text: title })))),
    h('tbody', {}, rows.length ? rows : [h('tr', {}, h('td', { colspan: headers.length, class: 'muted', text: 'none' }))]));
}

function badge(state) {
  const text = String(state || 'UNKNOWN');
  const kind = {
    RUNNING: 'ok', ONLINE: 'ok', leader: 'ok', Leader: 'ok', free: 'ok', running: 'ok',
    PROGRESSING: 'info', WAITING: 'info', DELETING: 'info', starting: 'info', busy: 'info', Follower: 'info', follower: 'info',
    UNREACHABLE: 'bad', FAILED: 'bad', OFFLINE: 'bad', UNHEALTHY: 'bad', NOTREADY: 'bad', failed: 'bad', dirty: 'warn',
    FAILING_METRICS: 'warn', DRAINING: 'warn', cleaning: 'warn',
  }[text] || '';
  return h('span', { class: `badge ${kind}`, 'data-state': text, text });
}

function when(ms) {
  if (!ms) return '-';
  const date = new Date(Number(ms));
  return Number.isNaN(date.getTime()) ? String(ms) : date.toISOString().replace('T', ' ').slice(0, 19);
}

function text(value) {
  if (value === undefined || value === null || value === '') return '-';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

// A cluster as every view names it: `tenant/name` (`operator/edge` for a platform-wide one).
function clusterName(ref) {
  if (!ref) return '-';
  if (typeof ref === 'string') return ref;
  return ref.tenant ? `${ref.tenant}/${ref.name}` : text(ref.name);
}

// A user id with the user's name when the console knows it.
function userName(uid) {
  const name = app.names.get(uid);
  const you = app.me && app.me.uid === uid ? ', you' : '';
  return name ? `${name} (${uid}${you})` : `${uid}${you ? ' (you)' : ''}`;
}

// ---- Calling the API -----------------------------------------------------------------------

// `status` 0: the node did not answer at all.
class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// The words of a refusal, wherever its dialect puts them: the platform API in
// `content.message`, Krake in `detail`, Kubernetes-style statuses in `message`, others in
// `error` or `data.message`; a body that is not JSON is the words itself.
function refusalWords(parsed, raw, statusText) {
  if (parsed && typeof parsed === 'object') {
    const said = [parsed.content && parsed.content.message, parsed.detail, parsed.message, parsed.error,
      parsed.data && parsed.data.message, parsed.title].find((w) => w !== undefined && w !== null && w !== '');
    if (said !== undefined) return typeof said === 'string' ? said : JSON.stringify(said);
  }
  return (typeof raw === 'string' && raw.trim()) || statusText || 'refused';
}

async function refusal(answer) {
  const raw = await answer.text();
  let parsed = null;
  try { parsed = raw ? JSON.parse(raw) : null; } catch (_) { parsed = null; }
  if (answer.status === 401) signOut('Your token was refused: sign in again.');
  return new ApiError(answer.status, `${refusalWords(parsed, raw, answer.statusText)} (${answer.status})`);
}

// fetch, noting whether this node answers.
async function reach(path, options) {
  let answer;
  try {
    answer = await fetch(path, { cache: 'no-store', ...options });
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    nodeDown();
    throw new ApiError(0, 'this node does not answer');
  }
  nodeUp();
  return answer;
}

async function call(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (app.token) headers.Authorization = `Bearer ${app.token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const answer = await reach(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!answer.ok) throw await refusal(answer);
  const raw = await answer.text();
  let parsed = null;
  try { parsed = raw ? JSON.parse(raw) : null; } catch (_) { parsed = raw; }
  return { body: parsed, headers: answer.headers };
}

const get = async (path) => (await call('GET', path)).body;
const data = async (path) => {
  const body = await get(path);
  return body && Object.prototype.hasOwnProperty.call(body, 'data') ? body.data : body;
};

// A `?watch=true` stream of JSON lines, resumed from the last version seen after a break (a
// follower keeps serving while the leader changes; a node that goes away is retried).
// `onRefused(error)` is called when the API refuses the stream (401, 403, 404): it is not retried.
function watch(path, onEvent, onStatus, onRefused) {
  const controller = new AbortController();
  let version = null;
  let stopped = false;
  let delay = 500;
  (async () => {
    while (!stopped) {
      try {
        const sep = path.includes('?') ? '&' : '?';
        const url = `${path}${sep}watch=true${version ? `&resourceVersion=${encodeURIComponent(version)}` : ''}`;
        const answer = await reach(url, { headers: { Authorization: `Bearer ${app.token}` }, signal: controller.signal });
        if (!answer.ok) throw await refusal(answer);
        onStatus && onStatus('live');
        delay = 500;
        const reader = answer.body.getReader();
        const decoder = new TextDecoder();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let at;
          while ((at = buffer.indexOf('\n')) >= 0) {
            const line = buffer.slice(0, at).trim();
            buffer = buffer.slice(at + 1);
            if (!line) continue;
            const event = JSON.parse(line);
            if (event.type === 'ERROR') { version = null; continue; }
            const seen = event.object && (event.object.resourceVersion || (event.object.metadata && event.object.metadata.resourceVersion));
            if (seen) version = seen;
            onEvent(event);
          }
        }
      } catch (error) {
        if (stopped) return;
        if (error.status === 401 || error.status === 403 || error.status === 404) {
          onStatus && onStatus(`stopped: ${error.message}`);
          if (onRefused) onRefused(error);
          return;
        }
      }
      if (stopped) return;
      onStatus && onStatus(app.down ? 'this node does not answer: reconnecting' : 'reconnecting');
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 8000);
    }
  })();
  const stop = () => { stopped = true; controller.abort(); };
  app.stops.push(stop);
  return stop;
}

// Runs `fn` now and every `ms` while the view is shown.
function every(ms, fn) {
  let timer = null;
  let stopped = false;
  const tick = async () => {
    if (stopped) return;
    try { await fn(); } catch (_) { /* shown by fn */ }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  tick();
  app.stops.push(() => { stopped = true; clearTimeout(timer); });
}

// Shows a failed read in `where`. When the node did not answer, what is shown stays (marked
// stale by nodeDown); a refusal of a tenant's path may mean the caller left it: checked.
function failure(where, error) {
  if (error.status === 0) return;
  where.replaceChildren(h('p', { class: 'error', text: error.message || String(error) }));
  if ((error.status === 403 || error.status === 404) && app.tenant) checkMembership();
}

// ---- Notices: above every view, until what they say is over --------------------------------

function notice(id, ...content) {
  const area = document.getElementById('notices');
  let box = document.getElementById(id);
  if (!content.length) { if (box) box.remove(); return; }
  if (!box) { box = h('section', { class: 'notice', id, role: 'alert' }); area.append(box); }
  box.replaceChildren(...content.flat(Infinity).filter((c) => c !== null && c !== undefined));
}

// This node stopped answering: say so, since when, offer the other members `/cluster` listed
// (their own console: the token is kept per node, so one signs in there again), and grey what
// is shown. `/cluster` is asked every 2 s until the node answers again.
function nodeDown() {
  if (app.down) return;
  app.down = Date.now();
  document.getElementById('main').classList.add('stale');
  const others = app.members.filter((m) => m.id !== app.self && m.apiAddr);
  const since = when(app.down);
  const elapsed = h('span', { id: 'down-for', text: '(just now)' });
  notice('node-down',
    h('h2', { text: `This node (${location.host}) does not answer` }),
    h('p', {}, `No answer since ${since} UTC `, elapsed, `. What is shown below is stale since ${since} (greyed).`),
    others.length
      ? [h('p', { text: 'Other members of the cluster, each with its console (sign in there again):' }),
        h('ul', { id: 'other-members' }, others.map((m) => {
          const url = `${location.protocol}//${m.apiAddr}/ui/`;
          return h('li', {}, h('a', { href: url, 'data-member': m.id, text: url }), ` (member ${m.id})`);
        }))]
      : h('p', { class: 'muted', text: 'No other member was known to this page.' }));
  const mine = app.down;
  const probe = async () => {
    if (app.down !== mine) return;
    elapsed.textContent = `(${Math.round((Date.now() - app.down) / 1000)} s ago)`;
    try { await fetch('/cluster', { cache: 'no-store' }); nodeUp(); return; } catch (_) { /* still down */ }
    setTimeout(probe, 2000);
  };
  setTimeout(probe, 2000);
}

function nodeUp() {
  if (!app.down) return;
  app.down = null;
  document.getElementById('main').classList.remove('stale');
  notice('node-down');
  route();
}

// Re-reads the caller's tenants after a refusal of the chosen tenant's path: a member removed
// from it is told so, and what was shown of it is cleared.
let checking = null;
function checkMembership() {
  if (!checking) {
    checking = (async () => {
      try {
        const roles = (await data(`${API}/tenant`)) || {};
        app.roles = roles;
        if (app.tenant && !has(roles, app.tenant)) lostTenant(app.tenant);
      } catch (_) { /* the refusal is shown where it happened */ }
      checking = null;
    })();
  }
  return checking;
}

function lostTenant(tenant) {
  notice('lost-tenant',
    h('h2', { text: `You are no longer a member of tenant ${tenant}` }),
    h('p', { text: `The API no longer lets you read ${tenant} (an admin removed you, or the tenant was deleted). What was shown of it is cleared. To see it again, ask one of its admins to invite you.` }));
  app.tenant = null;
  sessionStorage.removeItem(TENANT);
  pickTenant();
  route();
}

// ---- Confirmation --------------------------------------------------------------------------

function confirmThen(question, action) {
  const dialog = document.getElementById('confirm');
  document.getElementById('confirm-text').textContent = question;
  dialog.returnValue = '';
  dialog.onclose = async () => {
    if (dialog.returnValue !== 'ok') return;
    try { await action(); } catch (error) { flash(error.message); }
  };
  dialog.showModal();
}

function flash(message) {
  const note = h('p', { class: 'error', id: 'flash', text: message });
  document.getElementById('flash')?.remove();
  document.getElementById('main').prepend(note);
}

// ---- Views ---------------------------------------------------------------------------------

function tenantPath() {
  return `${API}/tenant/${encodeURIComponent(app.tenant || '')}`;
}

// The members to offer should this node stop answering.
function remember(cluster) {
  if (!cluster || !Array.isArray(cluster.members)) return;
  app.self = cluster.self;
  app.members = cluster.members.filter((m) => m.apiAddr).map((m) => ({ id: m.id, apiAddr: m.apiAddr }));
}

async function controlPlane(main) {
  const body = h('div', {});
  main.append(h('h1', { text: 'Control plane' }), body);
  every(2000, async () => {
    try {
      const cluster = await get('/cluster');
      remember(cluster);
      const rows = (cluster.members || []).map((m) => h('tr', { 'data-member': m.id },
        h('td', { text: m.id }), h('td', {}, badge(m.reachable === false ? 'unreachable' : (m.role || '-'))),
        h('td', { class: 'num', text: text(m.term) }), h('td', { class: 'num', text: text(m.appliedIndex) }),
        h('td', { class: 'num', text: text(m.replicationLag) }), h('td', { text: text(m.apiAddr) }),
        h('td', { text: text(m.membership) }), h('td', { text: text(m.version) })));
      body.replaceChildren(
        h('dl', { class: 'kv' },
          h('dt', { text: 'this node' }), h('dd', { text: text(cluster.self) }),
          h('dt', { text: 'leader' }), h('dd', { id: 'leader', text: cluster.leader === null ? 'none known' : text(cluster.leader) }),
          h('dt', { text: 'term' }), h('dd', { id: 'term', text: text(cluster.term) })),
        h('h2', { text: 'Members' }),
        table(['id', 'role', 'term', 'applied', 'lag', 'API', 'membership', 'version'], rows));
    } catch (error) { failure(body, error); }
  });
}

async function tenants(main) {
  const body = h('div', {});
  main.append(h('h1', { text: 'Tenants' }), body);
  if (app.unregistered) { body.append(noTenant()); return; }
  try {
    // `GET /tenant` answers the caller's role by tenant.
    const roles = (await data(`${API}/tenant`)) || {};
    const rows = [];
    for (const [name, role] of Object.entries(roles)) {
      let members = '-';
      try {
        const detail = await data(`${API}/tenant/${encodeURIComponent(name)}`);
        for (const [uid, known] of Object.entries((detail && detail.names) || {})) if (known) app.names.set(uid, known);
        members = Object.entries((detail && detail.users) || {})
          .map(([user, member]) => `${userName(user)}: ${text(member.role)}${member.confirmed === false ? ', invited' : ''}`).join('; ') || '-';
      } catch (error) { members = error.message; }
      rows.push(h('tr', { 'data-tenant': name }, h('td', { text: name }), h('td', { text: text(role) }), h('td', { text: members })));
    }
    body.replaceChildren(table(['tenant', 'your role', 'members'], rows),
      h('p', { class: 'muted', text: 'Members are shown by name and user id; yours is marked.' }));
  } catch (error) { failure(body, error); }
}

function progressBar(progress) {
  const p = progress || {};
  const desired = Math.max(Number(p.desired) || 0, 1);
  const width = 240;
  const part = (n) => Math.round((Math.min(Number(n) || 0, desired) / desired) * width);
  return h('span', { class: 'progress', title: `desired ${text(p.desired)}, updated ${text(p.updated)}, ready ${text(p.ready)}, old ${text(p.old)}` },
    s('svg', { class: 'bar', width, height: 12, role: 'img' },
      s('rect', { x: 0, y: 0, width, height: 12, fill: '#e2e8f0' }),
      s('rect', { x: 0, y: 0, width: part(p.updated), height: 12, fill: '#90cdf4' }),
      s('rect', { x: 0, y: 0, width: part(p.ready), height: 12, fill: '#1f8a4c' })),
    h('span', { class: 'muted', text: ` ${text(p.ready)}/${text(p.desired)} ready, ${text(p.updated)} updated, ${text(p.old)} old` }));
}

// What a view of the chosen tenant shows when there is none to show; null when there is one.
function noTenant() {
  if (app.unregistered) return h('p', { class: 'muted', id: 'no-tenant', text: 'Register first (above): tenants, services, clusters and environments are shown to registered users.' });
  if (app.tenant) return null;
  return h('p', { class: 'muted', id: 'no-tenant', text: 'You are a member of no tenant: create one (POST /api/1.0-beta/tenant/NAME) or ask a tenant\'s admin to invite you.' });
}

async function services(main) {
  const none = noTenant();
  if (none) { main.append(h('h1', { text: 'Services' }), none); return; }
  const status = h('span', { class: 'live', id: 'live', text: 'connecting' });
  const body = h('div', {});
  main.append(h('h1', {}, 'Services ', status), body);
  const known = new Map();
  const render = () => {
    const rows = [...known.values()].sort((a, b) => a.name.localeCompare(b.name)).map((svc) => {
      const r = svc.reconcile || {};
      return h('tr', { 'data-service': svc.name },
        h('td', {}, h('a', { href: `#/service/${encodeURIComponent(svc.name)}`, text: svc.name })),
        h('td', {}, badge(r.phase)), h('td', { text: clusterName(svc.cluster) }),
        h('td', { class: 'num', text: text(svc.current) }), h('td', { class: 'num', text: text(svc.pending) }),
        h('td', {}, progressBar(r.progress)), h('td', { class: 'reason', text: text(r.reason) }));
    });
    body.replaceChildren(table(['service', 'phase', 'cluster', 'revision', 'pending', 'progress', 'reason'], rows));
  };
  render();
  watch(`${tenantPath()}/service`, (event) => {
    if (event.type === 'DELETED') known.delete(event.object.name); else known.set(event.object.name, event.object);
    render();
  }, (said) => { status.textContent = said; }, () => { known.clear(); render(); checkMembership(); });
}

async function serviceDetail(main, name) {
  const none = noTenant();
  if (none) { main.append(h('h1', { text: `Service ${name}` }), none); return; }
  const base = `${tenantPath()}/service/${encodeURIComponent(name)}`;
  const status = h('span', { class: 'live', id: 'live', text: 'connecting' });
  const summary = h('section', { class: 'card', id: 'summary' });
  const roles = h('section', { class: 'card', id: 'roles' });
  const history = h('section', { class: 'card', id: 'history' });
  const placement = h('section', { class: 'card', id: 'placement' });
  const events = h('section', { class: 'card', id: 'events' });
  const logs = h('section', { class: 'card', id: 'logs' }, h('h2', { text: 'Log' }), h('p', { class: 'muted', text: 'Choose an instance above.' }));
  main.append(h('h1', {}, `Service ${name} `, status), summary, roles, placement, history, events, logs);
  let full = null;
  const refresh = async () => {
    try { full = await data(base); } catch (error) { failure(summary, error); return; }
    const r = full.reconcile || {};
    const current = full.revision;
    summary.replaceChildren(
      h('h2', {}, 'Status ', badge(r.phase)),
      h('p', { class: 'reason', id: 'reason', text: text(r.reason) }),
      progressBar(r.progress),
      h('dl', { class: 'kv' },
        h('dt', { text: 'revision' }), h('dd', { text: text(current) }),
        h('dt', { text: 'pending' }), h('dd', {}, full.pending ? [text(full.pending), ' ', h('button', {
          type: 'button', id: 'accept', onclick: () => confirmThen(`Accept revision ${full.pending} of ${name}?`, async () => {
            await call('PUT', `${base}/revision/${full.pending}?accept=true`); await refresh();
          }),
        }, 'Accept')] : '-'),
        h('dt', { text: 'cluster' }), h('dd', { id: 'service-cluster', text: clusterName(full.cluster) }),
        h('dt', { text: 'environment' }), h('dd', { text: text(full.environment) }),
        h('dt', { text: 'running' }), h('dd', { text: full.status ? `${full.status.running}/${full.status.desired}${full.status.converged ? ' (converged)' : ''}` : '-' })));
    const decision = full.scheduling || {};
    placement.replaceChildren(h('h2', { text: 'Placement' }),
      h('p', { text: decision.chosen ? `chosen: ${clusterName(decision.chosen.cluster)} (score ${text(decision.chosen.score)})` : 'no decision yet' }),
      table(['excluded cluster', 'reason'], (decision.excluded || []).map((x) => h('tr', {}, h('td', { text: clusterName(x.cluster) }), h('td', { text: text(x.reason) })))));
    events.replaceChildren(h('h2', { text: 'Events' }), table(['last', 'type', 'reason', 'count', 'message'],
      [...(full.events || [])].reverse().map((e) => h('tr', {}, h('td', { text: text(e.lastTimestamp) }), h('td', {}, badge(e.type)),
        h('td', { text: text(e.reason) }), h('td', { class: 'num', text: text(e.counter) }), h('td', { text: text(e.message) })))));
    await refreshRoles();
    try {
      const revisions = await data(`${base}/history`);
      const list = Array.isArray(revisions) ? revisions : (revisions && revisions.history) || [];
      history.replaceChildren(h('h2', { text: 'Revisions' }), table(['revision', 'type', 'accepted', 'previous', 'comment', ''],
        list.map((rev) => h('tr', { 'data-revision': rev.revision },
          h('td', { text: text(rev.revision) }), h('td', { text: text(rev.type) }), h('td', { text: text(rev.accepted) }),
          h('td', { text: text(rev.previous) }), h('td', { text: text(rev.comment) }),
          h('td', {}, rev.revision !== current && rev.accepted ? h('button', {
            type: 'button', class: 'rollback', onclick: () => confirmThen(`Roll ${name} back to revision ${rev.revision}?`, async () => {
              await call('PUT', `${base}/revision/${current}/rollback/${rev.revision}?accept=true`); await refresh();
            }),
          }, 'Roll back') : '')))));
    } catch (error) { failure(history, error); }
  };
  // Each role's scale form lives as long as the view: the instances under it are redrawn every
  // few seconds, but what the user is typing (and the focus) is kept, and the count shown
  // follows the service only while the user has not edited it.
  const rolesHeading = h('h2', { text: 'Roles and instances' });
  const roleParts = new Map();
  const rolePart = (role) => {
    if (roleParts.has(role)) return roleParts.get(role);
    const input = h('input', {
      type: 'number', min: 0, max: 1000, 'data-scale': role, 'aria-label': `instances of ${role}`,
      oninput: () => { input.dataset.edited = 'true'; }, onchange: () => { input.dataset.edited = 'true'; },
    });
    const form = h('form', {
      class: 'inline', onsubmit: (event) => {
        event.preventDefault();
        const count = Number(input.value);
        const current = full && full.revision;
        confirmThen(`Scale ${role} of ${name} to ${count}?`, async () => {
          delete input.dataset.edited;
          await call('PATCH', `${base}/revision/${current}/scale?accept=true`, { scale: { [role]: count } });
          await refresh();
        });
      },
    }, input, h('button', { type: 'submit', class: 'scale', 'data-role': role }, 'Scale'));
    const instances = h('div', { 'data-instances': role });
    const part = { section: h('div', {}, h('h3', {}, `${role} `, form), instances), input, instances };
    roleParts.set(role, part);
    return part;
  };
  const refreshRoles = async () => {
    const deployment = (full && full.deployment) || {};
    const names = Object.keys(deployment.roles || {});
    for (const role of names) {
      const part = rolePart(role);
      if (document.activeElement !== part.input && !part.input.dataset.edited) {
        part.input.value = deployment.roles[role].instances;
      }
      const parts = [];
      let instances = {};
      try { instances = ((await data(`${base}/role/${encodeURIComponent(role)}`)) || {}).instances || {}; } catch (error) {
        parts.push(h('p', { class: 'error', text: error.message }));
      }
      parts.push(table(['instance', 'status', 'ready', 'restarts', 'memory', 'reason', ''],
        Object.values(instances).map((i) => h('tr', { 'data-instance': i.id },
          h('td', {}, h('a', { href: '#', onclick: (event) => { event.preventDefault(); tail(role, i.id); }, text: i.id })),
          h('td', {}, badge(i.status)), h('td', { text: text(i.ready) }), h('td', { class: 'num', text: text(i.restarts) }),
          h('td', { class: 'num', text: i.usage ? `${Math.round((i.usage.memoryBytes || 0) / 1048576)} MiB` : '-' }),
          h('td', { text: text(i.reason) }),
          h('td', {}, h('button', {
            type: 'button', class: 'restart', onclick: () => confirmThen(`Restart instance ${i.id}?`, async () => {
              await call('DELETE', `${base}/role/${encodeURIComponent(role)}/instance/${encodeURIComponent(i.id)}`); await refresh();
            }),
          }, 'Restart'))))));
      part.instances.replaceChildren(...parts);
    }
    for (const role of [...roleParts.keys()]) if (!names.includes(role)) roleParts.delete(role);
    const wanted = [rolesHeading, ...names.map((role) => roleParts.get(role).section)];
    const shown = [...roles.children];
    if (wanted.length !== shown.length || wanted.some((el, i) => el !== shown[i])) roles.replaceChildren(...wanted);
  };
  let stopTail = null;
  const tail = (role, id) => {
    if (stopTail) stopTail();
    const out = h('pre', { class: 'log', id: 'log' });
    logs.replaceChildren(h('h2', { text: `Log of ${id}` }), out);
    let offset = null;
    let stopped = false;
    stopTail = () => { stopped = true; };
    app.stops.push(stopTail);
    const path = `${tenantPath()}/logs/service/${encodeURIComponent(name)}/role/${encodeURIComponent(role)}/instance/${encodeURIComponent(id)}`;
    const step = async () => {
      if (stopped) return;
      try {
        const answer = await fetch(offset === null ? `${path}?tail=100` : `${path}?from=${offset}`, { headers: { Authorization: `Bearer ${app.token}` }, cache: 'no-store' });
        if (answer.ok) {
          const said = await answer.text();
          offset = answer.headers.get('x-drover-log-offset') || offset;
          if (said) { out.append(document.createTextNode(said)); out.scrollTop = out.scrollHeight; }
        }
      } catch (_) { /* retried */ }
      if (!stopped) setTimeout(step, 1000);
    };
    step();
  };
  let pending = null;
  const soon = () => { if (!pending) pending = setTimeout(async () => { pending = null; await refresh(); }, 150); };
  await refresh();
  watch(`${tenantPath()}/service`, (event) => { if (event.object && event.object.name === name) soon(); }, (said) => { status.textContent = said; }, () => checkMembership());
  // Instances' readiness and usage come from the agent, not the replicated state.
  every(3000, async () => { if (full) await refreshRoles(); });
}

function clusterRow(c) {
  const st = c.status || {};
  const facts = st.facts || {};
  const counts = st.instances || {};
  const key = `${c.tenant}/${c.name}`;
  return h('tr', { 'data-cluster': key },
    h('td', { text: key }), h('td', {}, badge(c.draining ? 'DRAINING' : st.state)),
    h('td', { class: 'reason', text: text(st.reason) }),
    h('td', {}, capacityBars(facts)),
    h('td', { class: 'num', text: `${Number(counts.running) || 0} running of ${['starting', 'running', 'exited', 'failed'].reduce((n, k) => n + (Number(counts[k]) || 0), 0)}${counts.oom_kills ? `, ${counts.oom_kills} OOM kills` : ''}` }),
    h('td', {}, timeline(c.events || [])),
    h('td', {}, h('button', {
      type: 'button', class: 'drain', onclick: () => confirmThen(`${c.draining ? 'Stop draining' : 'Drain'} cluster ${key}?`, async () => {
        await call('PUT', `${API}/tenant/${encodeURIComponent(c.tenant)}/cluster/${encodeURIComponent(c.name)}/drain`, { draining: !c.draining });
      }),
    }, c.draining ? 'Undrain' : 'Drain')));
}

// CPU and memory against the cluster's capacity: what its instances request (light) and what
// they use (dark), as its agent last reported.
function capacityBars(facts) {
  const capacity = facts.capacity || {};
  const free = facts.free || {};
  const used = facts.used || {};
  const row = (label, key, unit) => {
    const width = 160;
    const total = Number(capacity[key]) || 0;
    const asked = total - (Number(free[key]) || 0);
    const use = used[key] === undefined ? null : Number(used[key]);
    const scale = (v) => (total > 0 ? Math.round(Math.min(Math.max(v, 0) / total, 1) * width) : 0);
    return h('div', {}, s('svg', { class: 'bar', width, height: 8, role: 'img' },
      s('rect', { x: 0, y: 0, width, height: 8, fill: '#e2e8f0' }),
      s('rect', { x: 0, y: 0, width: scale(asked), height: 8, fill: '#90cdf4' }),
      s('rect', { x: 0, y: 0, width: scale(use || 0), height: 8, fill: '#2b6cb0' })),
    h('span', { class: 'muted', text: `${label}: ${asked} requested, ${use === null ? '-' : use} used of ${total || '-'} ${unit}` }));
  };
  if (!facts.capacity) return h('span', { class: 'muted', text: 'no report yet' });
  return h('div', {}, row('CPU', 'cpu_millis', 'm'), row('memory', 'memory_mib', 'MiB'));
}

// The timeline's colours by state, as its legend lists them (the last: every other state).
const TIMELINE = [['ONLINE', '#1f8a4c'], ['OFFLINE, UNHEALTHY, NOTREADY', '#c53030'], ['FAILING_METRICS', '#b7791f'], ['any other', '#5f6b7a']];

// A cluster's state changes on a line, oldest left.
function timeline(events) {
  const changes = events.filter((e) => e.to).slice(-12);
  if (!changes.length) return h('span', { class: 'muted', text: '-' });
  const width = 180;
  const step = width / Math.max(changes.length, 1);
  const colour = (state) => (TIMELINE.find(([states]) => states.split(', ').includes(state)) || TIMELINE[TIMELINE.length - 1])[1];
  return s('svg', { class: 'bar timeline', width, height: 14, role: 'img' },
    changes.map((e, i) => {
      const state = e.to;
      const mark = s('rect', { x: Math.round(i * step), y: 2, width: Math.max(Math.round(step) - 2, 2), height: 10, fill: colour(state) });
      mark.append(s('title', { text: `${when(e.at_ms)} ${e.from} → ${state}: ${e.reason || ''}` }));
      return mark;
    }));
}

function legend() {
  return h('p', { class: 'legend', id: 'timeline-legend' }, 'Transitions, oldest left (hover for when and why): ',
    TIMELINE.map(([label, fill]) => h('span', {}, s('svg', { class: 'swatch', width: 10, height: 10, role: 'img' },
      s('rect', { x: 0, y: 0, width: 10, height: 10, fill })), ` ${label}`)));
}

// Operators read every tenant's clusters; anybody else the chosen tenant's, the one list a
// member may read (asking the operators' list first would be refused every 2 s).
async function clusters(main) {
  const body = h('div', {});
  main.append(h('h1', {}, 'Clusters ', h('span', { class: 'live', text: 'every 2 s' })), body);
  const operator = isOperator();
  if (!operator) {
    const none = noTenant();
    if (none) { body.append(none); return; }
  }
  const headers = ['cluster', 'state', 'reason', 'capacity and use', 'instances', 'transitions', ''];
  every(2000, async () => {
    try {
      const list = await data(operator ? `${API}/cluster` : `${tenantPath()}/cluster`);
      body.replaceChildren(h('h2', { text: operator ? 'Every tenant' : `Tenant ${app.tenant}` }),
        table(headers, (list || []).map(clusterRow)), legend());
    } catch (error) { failure(body, error); }
  });
}

async function environments(main) {
  const body = h('div', {});
  main.append(h('h1', { text: `Environments of ${app.tenant || '-'}` }), body);
  const none = noTenant();
  if (none) { body.append(none); return; }
  every(3000, async () => {
    try {
      const accounts = await data(`${tenantPath()}/account`);
      const parts = [];
      for (const account of (Array.isArray(accounts) ? accounts : Object.keys(accounts || {}))) {
        const a = typeof account === 'string' ? account : account.name;
        const envs = await data(`${tenantPath()}/account/${encodeURIComponent(a)}/environment`);
        for (const env of (Array.isArray(envs) ? envs : Object.keys(envs || {}))) {
          const e = typeof env === 'string' ? env : env.name;
          let usable = null;
          try { usable = await data(`${tenantPath()}/account/${encodeURIComponent(a)}/environment/${encodeURIComponent(e)}/clusters`); } catch (error) { usable = { error: error.message }; }
          parts.push(h('section', { class: 'card', 'data-environment': `${a}/${e}` }, h('h2', { text: `${a} / ${e}` }),
            usable.error ? h('p', { class: 'error', text: usable.error }) : [
              h('p', { class: 'muted', text: `free: ${text(usable.free && usable.free.cpu_millis)} m CPU, ${text(usable.free && usable.free.memory_mib)} MiB` }),
              table(['cluster', 'state', 'capacity', 'free'], (usable.clusters || []).map((c) => h('tr', {},
                h('td', { text: `${c.tenant}/${c.name}` }), h('td', {}, badge(c.state)),
                h('td', { text: c.capacity ? `${c.capacity.cpu_millis} m, ${c.capacity.memory_mib} MiB` : '-' }),
                h('td', { text: c.free ? `${c.free.cpu_millis} m, ${c.free.memory_mib} MiB` : '-' }))))]));
        }
      }
      body.replaceChildren(...(parts.length ? parts : [h('p', { class: 'muted', text: 'none' })]));
    } catch (error) { failure(body, error); }
  });
}

async function pools(main) {
  const body = h('div', {});
  main.append(h('h1', {}, 'Pools ', h('span', { class: 'live', text: 'every 3 s' })), body);
  every(3000, async () => {
    try {
      const resources = await get('/pools/resources');
      const list = Array.isArray(resources) ? resources : (resources && (resources.resources || resources.items)) || [];
      const byState = {};
      for (const r of list) byState[r.state] = (byState[r.state] || 0) + 1;
      body.replaceChildren(
        h('p', { id: 'pool-counts' }, Object.entries(byState).map(([state, n]) => [badge(state), ` ${n}  `])),
        table(['name', 'type', 'state', 'owner', 'expires', 'updated'], list.map((r) => h('tr', { 'data-resource': r.name },
          h('td', { text: text(r.name) }), h('td', { text: text(r.type) }), h('td', {}, badge(r.state)),
          h('td', { text: text(r.owner) }), h('td', { text: text(r['expiration-date'] || r.expiration) }), h('td', { text: text(r.lastupdate) })))));
    } catch (error) { failure(body, error); }
  });
}

// Operators list every namespace at once; anybody else each namespace named after one of their
// tenants, the namespaces the lease API lets a member list (PLATFORM.md).
async function leases(main) {
  const body = h('div', {});
  main.append(h('h1', {}, 'Leases ', h('span', { class: 'live', text: 'every 3 s' })), body);
  const namespaces = Object.keys(app.roles).sort();
  if (!isOperator() && !namespaces.length) {
    body.append(app.unregistered ? noTenant() : h('p', { class: 'muted', text: 'You may list the leases of the namespaces named after your tenants, and you are a member of none.' }));
    return;
  }
  const paths = isOperator() ? ['/apis/coordination.k8s.io/v1/leases']
    : namespaces.map((ns) => `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(ns)}/leases`);
  every(3000, async () => {
    try {
      const items = (await Promise.all(paths.map(get))).flatMap((list) => (list && list.items) || []);
      body.replaceChildren(h('p', { class: 'muted', id: 'lease-scope', text: isOperator() ? 'Every namespace.' : `Namespaces: ${namespaces.join(', ')}.` }),
        table(['namespace', 'name', 'holder', 'duration', 'renewed', 'transitions'], items.map((l) => h('tr', { 'data-lease': `${l.metadata && l.metadata.namespace}/${l.metadata && l.metadata.name}` },
        h('td', { text: text(l.metadata && l.metadata.namespace) }), h('td', { text: text(l.metadata && l.metadata.name) }),
        h('td', { text: text(l.spec && l.spec.holderIdentity) }), h('td', { text: text(l.spec && l.spec.leaseDurationSeconds) }),
        h('td', { text: text(l.spec && l.spec.renewTime) }), h('td', { text: text(l.spec && l.spec.leaseTransitions) })))));
    } catch (error) { failure(body, error); }
  });
}

// ---- Sign-in, tenant, routing --------------------------------------------------------------

function signIn(main, message) {
  const input = h('input', { type: 'password', id: 'token', autocomplete: 'off', placeholder: 'API token', 'aria-label': 'API token' });
  main.replaceChildren(h('section', { class: 'card signin' },
    h('h1', { text: 'Sign in' }),
    h('p', { class: 'muted', text: 'Paste an API token. It is kept in this tab only and sent to this node\'s API, never in a URL.' }),
    message ? h('p', { class: 'error', text: message }) : null,
    h('form', {
      onsubmit: async (event) => {
        event.preventDefault();
        app.token = input.value.trim();
        sessionStorage.setItem(TOKEN, app.token);
        await start();
      },
    }, input, h('button', { type: 'submit', id: 'sign-in' }, 'Sign in'))));
}

function signOut(message) {
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(TENANT);
  app.token = null;
  app.tenant = null;
  app.roles = {};
  app.names = new Map();
  app.me = null;
  app.unregistered = null;
  stopView();
  document.getElementById('notices').replaceChildren();
  document.getElementById('nav').hidden = true;
  document.getElementById('tenant-picker').hidden = true;
  document.getElementById('sign-out').hidden = true;
  signIn(document.getElementById('main'), message);
}

function stopView() {
  for (const stop of app.stops.splice(0)) stop();
}

// A token whose identity never registered: the platform refuses it everything with "register
// first". Say so, and how: a form here, or the API's `POST /user`.
function registerNotice(said) {
  const name = h('input', { id: 'register-name', placeholder: 'name', 'aria-label': 'name', required: true, autocomplete: 'given-name' });
  const surname = h('input', { id: 'register-surname', placeholder: 'surname', 'aria-label': 'surname', required: true, autocomplete: 'family-name' });
  notice('unregistered',
    h('h2', { text: 'This token\'s identity is not registered' }),
    h('p', { text: `The platform answers: ${said}` }),
    h('p', { text: 'Register it once — here, or with POST /api/1.0-beta/user and a body {"name": …, "surname": …} (docs/PLATFORM.md) — and you are a user of no tenant yet: create one, or accept an invitation. Until then the control plane, the pools and (for operators) the leases are shown.' }),
    h('form', {
      class: 'inline', id: 'register', onsubmit: (event) => {
        event.preventDefault();
        const profile = { name: name.value.trim(), surname: surname.value.trim() };
        confirmThen(`Register as ${profile.name} ${profile.surname}?`, async () => {
          await call('POST', `${API}/user`, profile);
          await start();
        });
      },
    }, name, surname, h('button', { type: 'submit', id: 'register-button' }, 'Register')));
}

// Who the caller is: their tenants and roles (an unregistered identity is refused), their own
// name, every user's name for operators, and the cluster's members.
async function whoAmI() {
  app.unregistered = null;
  try {
    app.roles = (await data(`${API}/tenant`)) || {};
  } catch (error) {
    app.roles = {};
    if (error.status === 403) app.unregistered = error.message;
    else if (error.status === 401) return false;
  }
  app.names = new Map();
  if (!app.unregistered) {
    try {
      app.me = await data(`${API}/user/info`);
      if (app.me) app.names.set(app.me.uid, `${app.me.name} ${app.me.surname}`.trim());
    } catch (_) { app.me = null; }
  }
  if (isOperator()) {
    try {
      for (const user of (await data(`${API}/user`)) || []) app.names.set(user.uid, user.name);
    } catch (_) { /* ids are shown */ }
  }
  try { remember(await get('/cluster')); } catch (_) { /* offered when known */ }
  return true;
}

function pickTenant() {
  const names = Object.keys(app.roles).sort();
  const picker = document.getElementById('tenant');
  picker.replaceChildren(...names.map((name) => h('option', { value: name, text: name })));
  if (!names.includes(app.tenant)) app.tenant = names.find((n) => n !== 'operator') || names[0] || null;
  if (app.tenant) { picker.value = app.tenant; sessionStorage.setItem(TENANT, app.tenant); }
  document.getElementById('tenant-picker').hidden = names.length === 0;
}

async function start() {
  const main = document.getElementById('main');
  if (!app.token) { signIn(main); return; }
  if (!(await whoAmI())) return;
  if (app.unregistered) registerNotice(app.unregistered); else notice('unregistered');
  pickTenant();
  document.getElementById('nav').hidden = false;
  document.getElementById('sign-out').hidden = false;
  route();
}

// The views by name. A Map, so that a name from the address (`#/constructor`, `#/__proto__`)
// finds a view or nothing, never a property every object has.
const VIEWS = new Map([
  ['', controlPlane], ['tenants', tenants], ['services', services], ['clusters', clusters],
  ['environments', environments], ['pools', pools], ['leases', leases],
]);

function viewName() {
  const raw = location.hash.replace(/^#\/?/, '');
  try { return decodeURIComponent(raw); } catch (_) { return raw; }
}

function route() {
  if (!app.token) return;
  stopView();
  const view = ++app.view;
  const main = document.getElementById('main');
  main.replaceChildren();
  const hash = viewName();
  for (const link of document.querySelectorAll('#nav a')) link.classList.toggle('active', link.getAttribute('href') === `#/${hash.split('/')[0]}`);
  const [first, ...rest] = hash.split('/');
  if (first === 'service' && rest.length) serviceDetail(main, rest.join('/'));
  else if (VIEWS.has(first)) VIEWS.get(first)(main);
  else {
    main.append(h('h1', { text: 'No such view' }),
      h('p', { class: 'error', id: 'no-such-view', text: `The console has no view named "${hash}".` }),
      h('p', {}, 'Its views: ', [...document.querySelectorAll('#nav a')].map((link, i) => [i ? ', ' : '', h('a', { href: link.getAttribute('href'), text: link.textContent })]), '.'));
  }
  return view;
}

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('sign-out').addEventListener('click', () => signOut());
  document.getElementById('tenant').addEventListener('change', (event) => {
    app.tenant = event.target.value;
    sessionStorage.setItem(TENANT, app.tenant);
    notice('lost-tenant');
    route();
  });
  window.addEventListener('hashchange', route);
  start();
});
