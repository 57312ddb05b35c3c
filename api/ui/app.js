// Drover's web console: a client of the same API every other client uses, with the caller's
// own token, so it shows exactly what the API lets that caller read. Every value reaches the
// page as text (element.textContent, attributes set one by one): nothing is parsed as HTML.
// The token lives in this tab's sessionStorage only (gone with the tab, never in a URL).
// Services and their events are live through the API's watches (one stream each, resumed from
// the last version after a break); the other views re-read their one list every few seconds
// while they are shown.
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
};

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
  for (const child of children.flat()) {
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
  for (const child of children.flat()) if (child) el.append(child);
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

// ---- Calling the API -----------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function call(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (app.token) headers.Authorization = `Bearer ${app.token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const answer = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  const raw = await answer.text();
  let parsed = null;
  try { parsed = raw ? JSON.parse(raw) : null; } catch (_) { parsed = raw; }
  if (!answer.ok) {
    const said = (parsed && (parsed.message || parsed.error || (parsed.data && parsed.data.message))) || raw || answer.statusText;
    if (answer.status === 401) signOut('Your token was refused: sign in again.');
    throw new ApiError(answer.status, `${answer.status}: ${typeof said === 'string' ? said : JSON.stringify(said)}`);
  }
  return { body: parsed, headers: answer.headers };
}

const get = async (path) => (await call('GET', path)).body;
const data = async (path) => {
  const body = await get(path);
  return body && Object.prototype.hasOwnProperty.call(body, 'data') ? body.data : body;
};

// A `?watch=true` stream of JSON lines, resumed from the last version seen after a break (a
// follower keeps serving while the leader changes; a node that goes away is retried).
function watch(path, onEvent, onStatus) {
  const controller = new AbortController();
  let version = null;
  let stopped = false;
  let delay = 500;
  (async () => {
    while (!stopped) {
      try {
        const sep = path.includes('?') ? '&' : '?';
        const url = `${path}${sep}watch=true${version ? `&resourceVersion=${encodeURIComponent(version)}` : ''}`;
        const answer = await fetch(url, { headers: { Authorization: `Bearer ${app.token}` }, signal: controller.signal, cache: 'no-store' });
        if (!answer.ok) throw new ApiError(answer.status, `${answer.status}`);
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
        if (error.status === 401 || error.status === 403 || error.status === 404) { onStatus && onStatus(`stopped: ${error.message}`); return; }
      }
      if (stopped) return;
      onStatus && onStatus('reconnecting');
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

function failure(where, error) {
  where.replaceChildren(h('p', { class: 'error', text: error.message || String(error) }));
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

async function controlPlane(main) {
  const body = h('div', {});
  main.append(h('h1', { text: 'Control plane' }), body);
  every(2000, async () => {
    try {
      const cluster = await get('/cluster');
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
  try {
    // `GET /tenant` answers the caller's role by tenant.
    const roles = (await data(`${API}/tenant`)) || {};
    const rows = [];
    for (const [name, role] of Object.entries(roles)) {
      let members = '-';
      try {
        const detail = await data(`${API}/tenant/${encodeURIComponent(name)}`);
        members = Object.entries((detail && detail.users) || {})
          .map(([user, member]) => `${user} (${text(member.role)}${member.confirmed === false ? ', invited' : ''})`).join(', ') || '-';
      } catch (error) { members = error.message; }
      rows.push(h('tr', { 'data-tenant': name }, h('td', { text: name }), h('td', { text: text(role) }), h('td', { text: members })));
    }
    body.replaceChildren(table(['tenant', 'your role', 'members'], rows));
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

async function services(main) {
  const status = h('span', { class: 'live', id: 'live', text: 'connecting' });
  const body = h('div', {});
  main.append(h('h1', {}, 'Services ', status), body);
  const known = new Map();
  const render = () => {
    const rows = [...known.values()].sort((a, b) => a.name.localeCompare(b.name)).map((svc) => {
      const r = svc.reconcile || {};
      return h('tr', { 'data-service': svc.name },
        h('td', {}, h('a', { href: `#/service/${encodeURIComponent(svc.name)}`, text: svc.name })),
        h('td', {}, badge(r.phase)), h('td', { text: text(svc.cluster && (svc.cluster.name || svc.cluster)) }),
        h('td', { class: 'num', text: text(svc.current) }), h('td', { class: 'num', text: text(svc.pending) }),
        h('td', {}, progressBar(r.progress)), h('td', { class: 'reason', text: text(r.reason) }));
    });
    body.replaceChildren(table(['service', 'phase', 'cluster', 'revision', 'pending', 'progress', 'reason'], rows));
  };
  render();
  watch(`${tenantPath()}/service`, (event) => {
    if (event.type === 'DELETED') known.delete(event.object.name); else known.set(event.object.name, event.object);
    render();
  }, (said) => { status.textContent = said; });
}

async function serviceDetail(main, name) {
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
        h('dt', { text: 'cluster' }), h('dd', { text: text(full.cluster && full.cluster.name) }),
        h('dt', { text: 'environment' }), h('dd', { text: text(full.environment) }),
        h('dt', { text: 'running' }), h('dd', { text: full.status ? `${full.status.running}/${full.status.desired}${full.status.converged ? ' (converged)' : ''}` : '-' })));
    const decision = full.scheduling || {};
    placement.replaceChildren(h('h2', { text: 'Placement' }),
      h('p', { text: decision.chosen ? `chosen: ${text(decision.chosen.cluster && (decision.chosen.cluster.name || decision.chosen.cluster))} (score ${text(decision.chosen.score)})` : 'no decision yet' }),
      table(['excluded cluster', 'reason'], (decision.excluded || []).map((x) => h('tr', {}, h('td', { text: text(x.cluster && (x.cluster.name || x.cluster)) }), h('td', { text: text(x.reason) })))));
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
  watch(`${tenantPath()}/service`, (event) => { if (event.object && event.object.name === name) soon(); }, (said) => { status.textContent = said; });
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

// A cluster's state changes on a line, oldest left.
function timeline(events) {
  const changes = events.filter((e) => e.to).slice(-12);
  if (!changes.length) return h('span', { class: 'muted', text: '-' });
  const width = 180;
  const step = width / Math.max(changes.length, 1);
  const colour = (state) => ({ ONLINE: '#1f8a4c', OFFLINE: '#c53030', UNHEALTHY: '#c53030', NOTREADY: '#c53030', FAILING_METRICS: '#b7791f' }[state] || '#5f6b7a');
  return s('svg', { class: 'bar timeline', width, height: 14, role: 'img' },
    changes.map((e, i) => {
      const state = e.to;
      const mark = s('rect', { x: Math.round(i * step), y: 2, width: Math.max(Math.round(step) - 2, 2), height: 10, fill: colour(state) });
      mark.append(s('title', { text: `${when(e.at_ms)} ${e.from} → ${state}: ${e.reason || ''}` }));
      return mark;
    }));
}

async function clusters(main) {
  const body = h('div', {});
  main.append(h('h1', {}, 'Clusters ', h('span', { class: 'live', text: 'every 2 s' })), body);
  every(2000, async () => {
    const sections = [];
    let operator = false;
    try {
      const all = await data(`${API}/cluster`);
      operator = true;
      sections.push(h('h2', { text: 'Every tenant' }), table(['cluster', 'state', 'reason', 'capacity and use', 'instances', 'transitions', ''], (all || []).map(clusterRow)));
    } catch (_) { operator = false; }
    if (!operator && app.tenant) {
      try {
        const own = await data(`${tenantPath()}/cluster`);
        sections.push(h('h2', { text: `Tenant ${app.tenant}` }), table(['cluster', 'state', 'reason', 'capacity and use', 'instances', 'transitions', ''], (own || []).map(clusterRow)));
      } catch (error) { sections.push(h('p', { class: 'error', text: error.message })); }
    }
    body.replaceChildren(...sections);
  });
}

async function environments(main) {
  const body = h('div', {});
  main.append(h('h1', { text: `Environments of ${app.tenant || '-'}` }), body);
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
        h('p', {}, Object.entries(byState).map(([state, n]) => [badge(state), ` ${n}  `])),
        table(['name', 'type', 'state', 'owner', 'expires', 'updated'], list.map((r) => h('tr', { 'data-resource': r.name },
          h('td', { text: text(r.name) }), h('td', { text: text(r.type) }), h('td', {}, badge(r.state)),
          h('td', { text: text(r.owner) }), h('td', { text: text(r['expiration-date'] || r.expiration) }), h('td', { text: text(r.lastupdate) })))));
    } catch (error) { failure(body, error); }
  });
}

async function leases(main) {
  const body = h('div', {});
  main.append(h('h1', {}, 'Leases ', h('span', { class: 'live', text: 'every 3 s' })), body);
  every(3000, async () => {
    try {
      const list = await get('/apis/coordination.k8s.io/v1/leases');
      body.replaceChildren(table(['namespace', 'name', 'holder', 'duration', 'renewed', 'transitions'], (list.items || []).map((l) => h('tr', {},
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
  stopView();
  document.getElementById('nav').hidden = true;
  document.getElementById('tenant-picker').hidden = true;
  document.getElementById('sign-out').hidden = true;
  signIn(document.getElementById('main'), message);
}

function stopView() {
  for (const stop of app.stops.splice(0)) stop();
}

async function start() {
  const main = document.getElementById('main');
  if (!app.token) { signIn(main); return; }
  let names = [];
  try {
    names = Object.keys((await data(`${API}/tenant`)) || {}).sort();
  } catch (error) {
    if (error.status === 401) return;
    names = [];
  }
  const picker = document.getElementById('tenant');
  picker.replaceChildren(...names.map((name) => h('option', { value: name, text: name })));
  if (!names.includes(app.tenant)) app.tenant = names.find((n) => n !== 'operator') || names[0] || null;
  if (app.tenant) { picker.value = app.tenant; sessionStorage.setItem(TENANT, app.tenant); }
  document.getElementById('nav').hidden = false;
  document.getElementById('tenant-picker').hidden = names.length === 0;
  document.getElementById('sign-out').hidden = false;
  route();
}

function route() {
  if (!app.token) return;
  stopView();
  const view = ++app.view;
  const main = document.getElementById('main');
  main.replaceChildren();
  const hash = decodeURIComponent(location.hash.replace(/^#\/?/, ''));
  for (const link of document.querySelectorAll('#nav a')) link.classList.toggle('active', link.getAttribute('href') === `#/${hash.split('/')[0]}`);
  const [first, ...rest] = hash.split('/');
  const views = { '': controlPlane, tenants, services, clusters, environments, pools, leases };
  if (first === 'service' && rest.length) serviceDetail(main, rest.join('/'));
  else if (views[first]) views[first](main);
  else main.append(h('p', { class: 'error', text: `no such view: ${hash}` }));
  return view;
}

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('sign-out').addEventListener('click', () => signOut());
  document.getElementById('tenant').addEventListener('change', (event) => {
    app.tenant = event.target.value;
    sessionStorage.setItem(TENANT, app.tenant);
    route();
  });
  window.addEventListener('hashchange', route);
  start();
});
