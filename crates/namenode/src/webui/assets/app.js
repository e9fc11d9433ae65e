// The NameNode's web UI: four views behind the URL's hash (#overview, #datanodes,
// #browse/<path>, #usage/<path>), drawn from /jmx, /startupProgress, WebHDFS and the
// namespace-usage answer. No library: the page must work where there is no network but
// the NameNode, and it is small enough not to need one. Everything a server sent is put
// into the page as text, never as HTML.
'use strict';

const USAGE = '/api/v1/namespace/usage';
const VIEW_LIMIT = 32 * 1024;

// ---- small helpers -------------------------------------------------------------------

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) {
    if (k !== undefined && k !== null) e.append(k instanceof Node ? k : String(k));
  }
  return e;
}

const SVG_NS = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids.flat()) e.append(k instanceof Node ? k : String(k));
  return e;
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
function bytes(n) {
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < UNITS.length - 1) { v /= 1024; i++; }
  return i === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${UNITS[i]}`;
}
function count(n) { return Number(n).toLocaleString('en-US'); }
function date(ms) { return ms > 0 ? new Date(ms).toLocaleString() : '—'; }
function pct(part, whole) { return whole > 0 ? (100 * part / whole) : 0; }

function meter(percent) {
  const p = Math.max(0, Math.min(100, percent));
  return el('span', { class: 'meter', title: `${p.toFixed(1)}%` },
    el('span', { style: `width:${p.toFixed(1)}%` }));
}

function factsTable(rows) {
  return el('table', { class: 'facts' },
    rows.map(([k, v]) => el('tr', {}, el('th', { text: k }), el('td', {}, v))));
}

function table(headers, rows, attrs) {
  return el('table', attrs || {},
    el('tr', {}, headers.map(h => el('th', { class: h.num ? 'num' : null, text: h.name || h }))),
    rows);
}

// ---- who the page acts as, and the requests it makes -------------------------------

const userInput = document.getElementById('user');
userInput.value = localStorage.getItem('ferrite.user') || '';
userInput.addEventListener('change', () => {
  localStorage.setItem('ferrite.user', userInput.value.trim());
  route();
});

function withUser(params) {
  const u = userInput.value.trim();
  if (u) params.set('user.name', u);
  return params;
}

function encodePath(path) {
  return path.split('/').map(encodeURIComponent).join('/');
}

function webhdfs(path, op, extra) {
  const q = withUser(new URLSearchParams({ op, ...(extra || {}) }));
  return `/webhdfs/v1${encodePath(path)}?${q}`;
}

// A request's answer, or an Error carrying the server's message (WebHDFS's
// RemoteException when it sent one).
async function fetchOk(url, init) {
  const r = await fetch(url, init);
  if (r.ok) return r;
  let msg = `${r.status} ${r.statusText}`;
  try {
    const j = await r.json();
    if (j.RemoteException) msg = `${j.RemoteException.exception}: ${j.RemoteException.message}`;
  } catch (_) { /* not JSON: the status says enough */ }
  throw new Error(msg);
}
async function getJson(url, init) { return (await fetchOk(url, init)).json(); }

async function bean(name) {
  const j = await getJson(`/jmx?qry=Hadoop:service=NameNode,name=${name}`);
  return j.beans[0] || {};
}

function parseJsonAttr(s) {
  try { return JSON.parse(s || '{}'); } catch (_) { return {}; }
}

const errorBox = document.getElementById('error');
function showError(e) {
  errorBox.textContent = e && e.message ? e.message : String(e);
  errorBox.hidden = false;
}

// ---- routing --------------------------------------------------------------------------

const view = document.getElementById('view');

// The path a hash like "#browse/a/b%20c" names: "/a/b c".
function pathOf(rest) {
  const parts = rest.split('/').filter(Boolean).map(decodeURIComponent);
  return '/' + parts.join('/');
}
function hashFor(tab, path) {
  return `#${tab}/${path.split('/').filter(Boolean).map(encodeURIComponent).join('/')}`;
}
function join(dir, name) { return dir === '/' ? `/${name}` : `${dir}/${name}`; }

let generation = 0;
async function route() {
  const hash = location.hash.slice(1);
  const slash = hash.indexOf('/');
  const tab = (slash < 0 ? hash : hash.slice(0, slash)) || 'overview';
  const rest = slash < 0 ? '' : hash.slice(slash + 1);
  for (const a of document.querySelectorAll('header nav a')) {
    a.classList.toggle('on', a.dataset.tab === tab);
  }
  errorBox.hidden = true;
  const mine = ++generation;
  const pages = { overview, datanodes, browse, usage };
  const page = pages[tab] || overview;
  try {
    const content = await page(pathOf(rest));
    // A slower, older request must not overwrite the page the user moved on to.
    if (mine === generation) view.replaceChildren(content);
  } catch (e) {
    if (mine === generation) { view.replaceChildren(); showError(e); }
  }
}
window.addEventListener('hashchange', route);

// ---- overview ---------------------------------------------------------------------------

async function overview() {
  const [info, fsn, status, progress] = await Promise.all([
    bean('NameNodeInfo'), bean('FSNamesystem'), bean('NameNodeStatus'),
    getJson('/startupProgress'),
  ]);
  const total = fsn.CapacityTotal || 0;
  const used = fsn.CapacityUsed || 0;
  const facts = factsTable([
    ['Address', status.HostAndPort],
    ['Started', date(info.NNStartedTimeInMillis)],
    ['Version', info.Version],
    ['Cluster ID', info.ClusterId],
    ['Block pool ID', info.BlockPoolId],
    ['Safe mode', info.Safemode ? info.Safemode : 'off'],
    ['Files and directories', el('span', { id: 'files-total', 'data-value': fsn.FilesTotal, text: count(fsn.FilesTotal) })],
    ['Blocks', el('span', { id: 'blocks-total', 'data-value': fsn.BlocksTotal, text: count(fsn.BlocksTotal) })],
    ['Files being written', count(fsn.NumFilesUnderConstruction)],
    ['Configured capacity', el('span', { id: 'capacity', 'data-value': total, text: bytes(total) })],
    ['DFS used', el('span', {}, `${bytes(used)} (${pct(used, total).toFixed(2)}%) `,
      meter(pct(used, total)))],
    ['Non DFS used', bytes(fsn.CapacityUsedNonDFS || 0)],
    ['DFS remaining', bytes(fsn.CapacityRemaining || 0)],
    ['Live DataNodes', el('a', { href: '#datanodes', id: 'live-nodes', 'data-value': fsn.NumLiveDataNodes, text: count(fsn.NumLiveDataNodes) })],
    ['Dead DataNodes', el('span', { id: 'dead-nodes', 'data-value': fsn.NumDeadDataNodes, text: count(fsn.NumDeadDataNodes) })],
    ['Last written transaction', count(fsn.LastWrittenTransactionId)],
    ['Transactions since last checkpoint', count(fsn.TransactionsSinceLastCheckpoint)],
    ['Last checkpoint', date(fsn.LastCheckpointTime)],
  ]);
  return el('section', { id: 'overview' },
    el('h1', { text: `NameNode ${status.HostAndPort || ''} (${status.State || 'active'})` }),
    facts,
    el('h2', { text: 'NameNode storage' }), storageTable(info),
    el('h2', { text: 'Start-up progress' }), progressTable(progress));
}

function storageTable(info) {
  const dirs = parseJsonAttr(info.NameDirStatuses);
  const journals = parseJsonAttr(info.NameJournalStatus);
  const rows = [];
  for (const [state, entries] of [['active', dirs.active || {}], ['failed', dirs.failed || {}]]) {
    for (const [dir, kind] of Object.entries(entries)) {
      rows.push(el('tr', { 'data-dir': dir }, el('td', { text: dir }), el('td', { text: kind }),
        el('td', { text: state })));
    }
  }
  const streams = (Array.isArray(journals) ? journals : []).map(j => el('tr', {},
    el('td', { text: j.manager }), el('td', { text: j.stream }),
    el('td', { text: j.disabled === 'true' ? 'disabled' : (j.required === 'true' ? 'required' : 'in service') })));
  return el('div', {},
    table(['Storage directory', 'Type', 'State'], rows, { id: 'name-dirs' }),
    streams.length ? table(['Journal manager', 'Current stream', 'State'], streams) : null);
}

function progressTable(p) {
  const rows = (p.phases || []).map(ph => el('tr', {},
    el('td', { text: ph.desc || ph.name }), el('td', { text: ph.status }),
    el('td', { class: 'num', text: `${Math.round(100 * (ph.percentComplete || 0))}%` }),
    el('td', { class: 'num', text: `${ph.elapsedTime || 0} ms` })));
  return el('div', {},
    el('p', { class: 'note', text: `Elapsed ${p.elapsedTime || 0} ms, ${Math.round(100 * (p.percentComplete || 0))}% complete.` }),
    table(['Phase', 'Status', { name: 'Complete', num: true }, { name: 'Elapsed', num: true }], rows));
}

// ---- DataNodes --------------------------------------------------------------------------

async function datanodes() {
  const info = await bean('NameNodeInfo');
  const live = parseJsonAttr(info.LiveNodes);
  const dead = parseJsonAttr(info.DeadNodes);
  const liveRows = Object.entries(live).sort().map(([key, n]) => el('tr', { 'data-node': key },
    el('td', { text: key }),
    el('td', {}, el('a', { href: `http://${n.infoAddr}/jmx`, text: n.infoAddr })),
    el('td', { class: 'num', text: `${n.lastContact}s` }),
    el('td', { class: 'num', text: bytes(n.capacity) }),
    el('td', { class: 'num' }, `${bytes(n.usedSpace)} `, meter(pct(n.usedSpace, n.capacity))),
    el('td', { class: 'num', text: bytes(n.remaining) }),
    el('td', { class: 'num', text: n.volfails }),
    el('td', { text: n.adminState })));
  const deadRows = Object.entries(dead).sort().map(([key, n]) => el('tr', { 'data-node': key },
    el('td', { text: key }), el('td', { class: 'num', text: `${n.lastContact}s` }),
    el('td', { text: n.adminState })));
  // Nodes on their way out, with the blocks still waiting for replicas elsewhere.
  const leaving = nodes => Object.entries(nodes).sort().map(([key, n]) => el('tr', { 'data-node': key },
    el('td', { text: key }),
    el('td', { class: 'num', text: n.underReplicatedBlocks }),
    el('td', { class: 'num', text: n.decommissionOnlyReplicas }),
    el('td', { class: 'num', text: n.underReplicateInOpenFiles })));
  const leavingHead = ['Node', { name: 'Under replicated blocks', num: true },
    { name: 'Blocks with no live replicas', num: true },
    { name: 'Under replicated blocks in files under construction', num: true }];
  const decom = leaving(parseJsonAttr(info.DecomNodes));
  const maint = leaving(parseJsonAttr(info.EnteringMaintenanceNodes));
  return el('section', { id: 'datanodes' },
    el('h1', { text: 'DataNodes' }),
    el('h2', { text: `In service: ${liveRows.length}` }),
    table(['Node', 'HTTP address', { name: 'Last contact', num: true }, { name: 'Capacity', num: true },
      { name: 'Used', num: true }, { name: 'Remaining', num: true }, { name: 'Failed volumes', num: true },
      'Admin state'], liveRows, { id: 'live' }),
    el('h2', { text: `Dead: ${deadRows.length}` }),
    table(['Node', { name: 'Last contact', num: true }, 'Admin state'], deadRows, { id: 'dead' }),
    el('h2', { text: `Decommissioning: ${decom.length}` }),
    table(leavingHead, decom, { id: 'decommissioning' }),
    el('h2', { text: `Entering maintenance: ${maint.length}` }),
    table(leavingHead, maint, { id: 'entering-maintenance' }));
}

// ---- file browser -----------------------------------------------------------------------

function crumbs(tab, path) {
  const parts = path.split('/').filter(Boolean);
  const out = [el('a', { href: hashFor(tab, '/'), text: '/' })];
  parts.forEach((name, i) => {
    const p = '/' + parts.slice(0, i + 1).join('/');
    out.push(el('a', { href: hashFor(tab, p), text: name }), el('span', { text: '/' }));
  });
  return el('p', { class: 'crumbs' }, out);
}

function permString(st) {
  const bits = parseInt(st.permission, 8);
  let s = st.type === 'DIRECTORY' ? 'd' : (st.type === 'SYMLINK' ? 'l' : '-');
  for (let shift = 6; shift >= 0; shift -= 3) {
    const b = (bits >> shift) & 7;
    s += (b & 4 ? 'r' : '-') + (b & 2 ? 'w' : '-') + (b & 1 ? 'x' : '-');
  }
  if (bits & 0o1000) s = s.slice(0, 9) + (s[9] === 'x' ? 't' : 'T');
  return st.aclBit ? s + '+' : s;
}

async function browse(path) {
  const st = (await getJson(webhdfs(path, 'GETFILESTATUS'))).FileStatus;
  if (st.type !== 'DIRECTORY') return fileView(path, st);
  const list = (await getJson(webhdfs(path, 'LISTSTATUS'))).FileStatuses.FileStatus;
  const rows = list.map(e => {
    const full = join(path, e.pathSuffix);
    const isDir = e.type === 'DIRECTORY';
    return el('tr', { 'data-name': e.pathSuffix },
      el('td', { text: permString(e) }), el('td', { text: e.owner }), el('td', { text: e.group }),
      el('td', { class: 'num', text: isDir ? '' : bytes(e.length) }),
      el('td', { text: date(e.modificationTime) }),
      el('td', { class: 'num', text: isDir ? '' : e.replication }),
      el('td', { class: 'num', text: isDir ? '' : bytes(e.blockSize) }),
      el('td', {}, el('a', { href: hashFor('browse', full), class: 'entry', text: e.pathSuffix })),
      el('td', {},
        isDir ? null : el('a', { href: webhdfs(full, 'OPEN'), download: e.pathSuffix, class: 'download', text: 'download' }),
        ' ',
        el('button', { class: 'delete', onclick: () => remove(full, path) }, 'delete')));
  });
  return el('section', { id: 'browse', 'data-path': path },
    el('h1', { text: 'Browse the file system' }),
    crumbs('browse', path),
    el('div', { class: 'tools' }, mkdirForm(path), uploadForm(path)),
    table(['Permission', 'Owner', 'Group', { name: 'Size', num: true }, 'Last modified',
      { name: 'Replication', num: true }, { name: 'Block size', num: true }, 'Name', ''], rows,
    { id: 'listing' }),
    rows.length ? null : el('p', { class: 'note', text: 'This directory is empty.' }));
}

function mkdirForm(dir) {
  const name = el('input', { id: 'mkdir-name', placeholder: 'new directory', required: true });
  return el('form', {
    onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        await getJson(webhdfs(join(dir, name.value.trim()), 'MKDIRS', { permission: '755' }), { method: 'PUT' });
        route();
      } catch (e) { showError(e); }
    },
  }, name, el('button', { id: 'mkdir', type: 'submit' }, 'Create directory'));
}

// CREATE in HDFS's two steps: the NameNode names a DataNode (noredirect answers the
// location as JSON, since a browser would not resend the body after a redirect), and the
// bytes go there.
function uploadForm(dir) {
  const input = el('input', { id: 'upload-file', type: 'file', multiple: true });
  return el('form', {
    onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        for (const file of input.files) {
          const where = await getJson(webhdfs(join(dir, file.name), 'CREATE',
            { overwrite: 'false', noredirect: 'true' }), { method: 'PUT' });
          await fetchOk(where.Location, {
            method: 'PUT', body: file, headers: { 'Content-Type': 'application/octet-stream' },
          });
        }
        route();
      } catch (e) { showError(e); }
    },
  }, input, el('button', { id: 'upload', type: 'submit' }, 'Upload'));
}

async function remove(full, dir) {
  if (!window.confirm(`Delete ${full}?`)) return;
  try {
    await getJson(webhdfs(full, 'DELETE', { recursive: 'true' }), { method: 'DELETE' });
    if (location.hash === hashFor('browse', dir)) route();
    else location.hash = hashFor('browse', dir);
  } catch (e) { showError(e); }
}

async function fileView(path, st) {
  const r = await fetchOk(webhdfs(path, 'OPEN', { length: String(VIEW_LIMIT) }));
  const text = await r.text();
  const parent = path.slice(0, path.lastIndexOf('/')) || '/';
  return el('section', { id: 'file', 'data-path': path },
    el('h1', { text: path }),
    crumbs('browse', parent),
    factsTable([
      ['Size', bytes(st.length)], ['Replication', st.replication],
      ['Block size', bytes(st.blockSize)], ['Owner', `${st.owner}:${st.group}`],
      ['Permission', permString(st)], ['Last modified', date(st.modificationTime)],
    ]),
    el('p', {},
      el('a', { href: webhdfs(path, 'OPEN'), download: path.split('/').pop(), id: 'download', text: 'Download' }),
      st.length > VIEW_LIMIT ? el('span', { class: 'note', text: ` (showing the first ${bytes(VIEW_LIMIT)})` }) : null),
    el('pre', { class: 'content', id: 'content', text }));
}

// ---- namespace usage --------------------------------------------------------------------

async function usage(path) {
  const q = withUser(new URLSearchParams({ path, top: '30' }));
  const u = await getJson(`${USAGE}?${q}`);
  return el('section', { id: 'usage', 'data-path': path },
    el('h1', { text: 'Namespace usage' }),
    crumbs('usage', path),
    factsTable([
      ['Files', el('span', { id: 'usage-files', 'data-value': u.files, text: count(u.files) })],
      ['Directories', el('span', { id: 'usage-dirs', 'data-value': u.dirs, text: count(u.dirs) })],
      ['Logical size', el('span', { id: 'usage-bytes', 'data-value': u.bytes, text: bytes(u.bytes) })],
      ['Size with replicas', bytes(u.rawBytes)],
      ['Last change below', date(u.updated)],
      ['As of transaction', count(u.txid)],
    ]),
    quotaFacts(u.quota),
    el('div', { class: 'charts' },
      el('div', {}, el('h2', { text: 'Space by child (click a directory to drill down)' }), childChart(path, u)),
      el('div', {}, el('h2', { text: 'File sizes' }), histogramChart(u.histogram))),
    el('h2', { text: 'Directories holding the most data in their own files' }),
    heaviestTable(u));
}

// The directory's quotas with a meter each; nothing when it has none.
function quotaFacts(q) {
  if (!q) return null;
  const row = (label, used, limit, fmt, id) => [label, limit < 0
    ? el('span', { text: `${fmt(used)} (no quota)` })
    : el('span', { id, 'data-used': used, 'data-quota': limit },
        meter(pct(used, limit)), ` ${fmt(used)} of ${fmt(limit)}`)];
  const rows = [
    row('Names (files and directories)', q.namesUsed, q.names, count, 'quota-names'),
    row('Space (with replicas)', q.spaceUsed, q.space, bytes, 'quota-space'),
  ];
  for (const [t, v] of Object.entries(q.types)) rows.push(row(`Space on ${t}`, v.used, v.quota, bytes, `quota-${t}`));
  return el('div', { id: 'quota' }, el('h2', { text: 'Quota' }), factsTable(rows));
}

function childChart(path, u) {
  const kids = u.children.filter(c => c.bytes > 0 || c.isDir);
  if (!kids.length) return el('p', { class: 'note', text: 'Nothing below.' });
  const rowH = 22;
  const width = 520;
  const labelW = 170;
  const max = Math.max(1, ...kids.map(c => c.bytes));
  const rows = kids.map((c, i) => {
    const w = Math.max(1, Math.round((width - labelW - 90) * c.bytes / max));
    const y = i * rowH;
    const g = svg('g', { class: c.isDir ? 'dir' : 'file', 'data-name': c.name },
      svg('title', {}, `${c.name}${c.isDir ? '/' : ''}: ${bytes(c.bytes)}, ${count(c.files)} files`),
      svg('text', { x: 0, y: y + 15 }, (c.isDir ? c.name + '/' : c.name).slice(0, 24)),
      svg('rect', { class: c.isDir ? 'bar' : 'bar file', x: labelW, y: y + 4, width: w, height: rowH - 8 }),
      svg('text', { x: labelW + w + 6, y: y + 15 }, bytes(c.bytes)));
    if (c.isDir) g.addEventListener('click', () => { location.hash = hashFor('usage', join(path, c.name)); });
    return g;
  });
  const shown = u.directFiles + u.directDirs > kids.length
    ? el('p', { class: 'note', text: `The ${kids.length} largest of ${count(u.directFiles + u.directDirs)} entries.` })
    : null;
  return el('div', {}, svg('svg', { id: 'child-chart', width, height: kids.length * rowH }, rows), shown);
}

function histogramChart(buckets) {
  if (!buckets.length) return el('p', { class: 'note', text: 'No files.' });
  const height = 200;
  const barW = Math.max(14, Math.min(48, Math.floor(520 / buckets.length) - 6));
  const max = Math.max(1, ...buckets.map(b => b.files));
  const bars = buckets.map((b, i) => {
    const h = Math.max(1, Math.round((height - 50) * b.files / max));
    const x = i * (barW + 6);
    const label = b.to === null ? `≥ ${bytes(b.from)}` : `< ${bytes(b.to)}`;
    return svg('g', { class: 'bucket', 'data-files': b.files },
      svg('title', {}, `${bytes(b.from)} – ${b.to === null ? '∞' : bytes(b.to)}: ${count(b.files)} files`),
      svg('rect', { class: 'bar', x, y: height - 30 - h, width: barW, height: h }),
      svg('text', { x, y: height - 34 - h }, count(b.files)),
      svg('text', { x, y: height - 14, transform: `rotate(20 ${x} ${height - 14})` }, label));
  });
  return svg('svg', { id: 'histogram', width: buckets.length * (barW + 6) + 40, height: height + 20 }, bars);
}

function heaviestTable(u) {
  const rows = u.heaviest.map(d => el('tr', {},
    el('td', {}, el('a', { href: hashFor('usage', d.path), text: d.path })),
    el('td', { class: 'num', text: bytes(d.bytes) }),
    el('td', { class: 'num', text: count(d.files) })));
  return el('div', {},
    table(['Directory', { name: 'In its own files', num: true }, { name: 'Files', num: true }], rows, { id: 'heaviest' }),
    u.heaviestComplete ? null : el('p', { class: 'note', text: 'The tree is large: only part of it was looked at.' }));
}

route();
