// SPDX-License-Identifier: MIT
// The causeway page: every view is drawn from the JSON API of the server
// that served this file; nothing is fetched from anywhere else.
'use strict';

const $ = (id) => document.getElementById(id);
const state = { by: 'process', range: '', share: 0, node: '', autoBy: false };

function fmtBytes(b) {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return (i ? b.toFixed(1) : String(b)) + ' ' + u[i];
}

function fmtUs(us) {
  if (us >= 1e6) return (us / 1e6).toFixed(2) + ' s';
  if (us >= 1e3) return (us / 1e3).toFixed(2) + ' ms';
  return us.toFixed(0) + ' us';
}

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : String(k));
  return e;
}

async function getJSON(url) {
  const r = await fetch(url);
  const body = await r.json().catch(() => ({ error: 'not JSON' }));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function setStatus(id, s, text, data) {
  const e = $(id);
  e.dataset.state = s;
  e.textContent = text;
  for (const [k, v] of Object.entries(data || {})) e.dataset[k] = v;
}

// ---- graph --------------------------------------------------------------

function graphQuery() {
  const p = new URLSearchParams({ by: state.by });
  if (state.range) p.set('since', state.range);
  if (state.share > 0) p.set('min_share', String(state.share));
  if (state.node) p.set('node', state.node);
  return p.toString();
}

function saveHash() {
  const q = graphQuery();
  if (location.hash.slice(1) !== q) history.replaceState(null, '', '#' + q);
}

function loadHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  state.by = p.get('by') || 'process';
  // No view named: a graph too large to draw opens on the host view.
  state.autoBy = !p.get('by');
  state.range = p.get('since') || '';
  state.share = parseFloat(p.get('min_share') || '0') || 0;
  state.node = p.get('node') || '';
  $('by').value = state.by;
  $('range').value = state.range;
  $('share').value = state.share;
}

let graphSeq = 0;

// The SVG of the view: /api/graph.svg answers 202 while the server's
// layout thread works on it (the page asks again each second), 503 when
// the layout failed or ran past its bound.
async function fetchSvg(q, seq) {
  for (;;) {
    const r = await fetch('/api/graph.svg?' + q);
    if (r.status === 202) {
      if (seq !== graphSeq) return null;
      setStatus('status', 'loading', 'laying out…');
      await new Promise((ok) => setTimeout(ok, 1000));
      if (seq !== graphSeq) return null;
      continue;
    }
    if (!r.ok) throw new Error((await r.json()).error);
    return r.text();
  }
}

// Over the layout's bound the page opens on the host view (once, when
// the address names no view) and says what it draws.
function noteDrawn(g, note) {
  const parts = [];
  if (note) parts.push(note);
  if (g.drawn_edges < g.edges.length)
    parts.push(`drawn: the ${g.drawn_edges} largest of ${g.edges.length} ` +
      'edges (all are in the table below)');
  $('graph-note').textContent = parts.join('; ');
  $('graph-note').hidden = !parts.length;
}

async function loadGraph() {
  const seq = ++graphSeq;
  let note = '';
  $('share-out').textContent = (state.share * 100).toFixed(1) + '%';
  $('focus').hidden = !state.node;
  $('focus-name').textContent = state.node;
  setStatus('status', 'loading', 'loading…');
  try {
    let g = await getJSON('/api/graph?' + graphQuery());
    if (seq !== graphSeq) return;
    if (state.autoBy && g.edges.length > g.layout_max_edges &&
        state.by !== 'host' && !state.node) {
      note = `the ${state.by} view has ${g.edges.length} edges, more ` +
        `than one drawing takes (${g.layout_max_edges}): showing the ` +
        'host view; choose another above';
      state.by = 'host';
      $('by').value = 'host';
      g = await getJSON('/api/graph?' + graphQuery());
      if (seq !== graphSeq) return;
    }
    state.autoBy = false;
    saveHash();
    const svgText = await fetchSvg(graphQuery(), seq);
    if (seq !== graphSeq || svgText === null) return;
    noteDrawn(g, note);
    drawGraph(g, svgText);
  } catch (err) {
    if (seq !== graphSeq) return;
    $('graph').replaceChildren();
    setStatus('status', 'error', String(err.message || err));
  }
}

function drawGraph(g, svgText) {
  const doc = new DOMParser().parseFromString(svgText, 'image/svg+xml');
  const svg = document.importNode(doc.documentElement, true);
  const byId = new Map(g.nodes.map((n) => [n.id, n]));
  $('graph').replaceChildren(svg);
  // Shrunk to fit unless that would make the text unreadable: then scroll.
  const w = parseFloat(svg.getAttribute('width')) * 4 / 3;
  svg.style.maxWidth = w > 1.6 * $('graph').clientWidth ? 'none' : '';
  for (const gn of svg.querySelectorAll('g.node')) {
    const n = byId.get(gn.id);
    if (!n) continue;
    gn.dataset.name = n.name;
    gn.dataset.label = n.label;
    if (n.red) gn.dataset.red = redText(n);
    if (n.name === state.node) gn.classList.add('focus');
    gn.addEventListener('click', () => focusNode(n.name));
  }
  drawEdges(g);
  drawSlowest(g);
  markMatches();
  const hidden = g.hidden_edges ? `, ${g.hidden_edges} under the share hidden` : '';
  setStatus('status', 'ready',
    `${g.nodes.length} nodes, ${g.edges.length} edges, ` +
    `${fmtBytes(g.total_bytes)} in all${hidden}`,
    { nodes: g.nodes.length, edges: g.edges.length, by: g.by,
      node: state.node });
}

// Estimated message counts read "~N", with the share of bytes whose
// messages were counted in the cell's title.
function msgsCell(e, n) {
  if (!e.msgs_estimated) return el('td', { class: 'num' }, n);
  const pct = ((e.sampled_fraction || 0) * 100).toFixed(1);
  return el('td', { class: 'num estimated',
    title: `estimated: messages counted on ${pct}% of the bytes` }, '~' + n);
}

function drawEdges(g) {
  const rows = [el('tr', {}, el('th', {}, 'client'), el('th', {}, 'server'),
    el('th', { class: 'num' }, 'conns'), el('th', { class: 'num' }, 'bytes c→s'),
    el('th', { class: 'num' }, 'bytes s→c'), el('th', { class: 'num' }, 'msgs c→s'),
    el('th', { class: 'num' }, 'msgs s→c'), el('th', { class: 'num' }, 'share'))];
  for (const e of g.edges.slice(0, 200)) {
    rows.push(el('tr', { 'data-edge': e.id },
      el('td', {}, e.client), el('td', {}, e.server),
      el('td', { class: 'num' }, e.conns),
      el('td', { class: 'num' }, fmtBytes(e.bytes_c2s)),
      el('td', { class: 'num' }, fmtBytes(e.bytes_s2c)),
      msgsCell(e, e.msgs_c2s), msgsCell(e, e.msgs_s2c),
      el('td', { class: 'num' }, (e.share * 100).toFixed(1) + '%')));
  }
  $('edges').replaceChildren(...rows);
}

// Edge health (docs/edge-health.md): the slowest edges by p99, where the
// graph has exchange timings; hidden when no edge has any.
function edgeP99(e) {
  return e.client_count ? e.client_p99_ns : (e.server_count ? e.server_p99_ns : 0);
}

function drawSlowest(g) {
  const timed = g.edges.filter((e) => edgeP99(e) > 0 || e.failed);
  $('slowest-box').hidden = !timed.length;
  if (!timed.length) return;
  timed.sort((a, b) => (b.failed - a.failed) || (edgeP99(b) - edgeP99(a)));
  const ns = (v) => (v ? fmtNs(v) : '–');
  const rows = [el('tr', {}, el('th', {}, 'client'), el('th', {}, 'server'),
    el('th', { class: 'num' }, 'p50'), el('th', { class: 'num' }, 'p99'),
    el('th', { class: 'num' }, 'server p99'), el('th', { class: 'num' }, 'network p99'),
    el('th', { class: 'num' }, 'exchanges'), el('th', { class: 'num' }, 'failed'),
    el('th', { class: 'num' }, 'resets'))];
  for (const e of timed.slice(0, 50)) {
    rows.push(el('tr', { 'data-edge': e.id, class: e.failed ? 'failed' : '' },
      el('td', {}, e.client), el('td', {}, e.server),
      el('td', { class: 'num' }, ns(e.client_count ? e.client_p50_ns : e.server_p50_ns)),
      el('td', { class: 'num' }, e.failed ? 'failed' : ns(edgeP99(e))),
      el('td', { class: 'num' }, ns(e.server_p99_ns)),
      el('td', { class: 'num' }, ns(e.network_p99_ns)),
      el('td', { class: 'num' }, e.client_count || e.server_count || 0),
      el('td', { class: 'num' }, (e.conns_refused || 0) + (e.conns_timeout || 0)),
      el('td', { class: 'num' }, (e.resets_by_client || 0) + (e.resets_by_server || 0))));
  }
  $('slowest').replaceChildren(...rows);
}

// A node's RED summary (the API's "red"), for its title on hover.
function redText(n) {
  if (!n.red) return '';
  const r = n.red;
  return `rate ${r.rate.toFixed(2)}/s, errors ${r.error_rate.toFixed(2)}/s ` +
    `(${r.errors}), duration p50 ${fmtNs(r.p50_ns)} p99 ${fmtNs(r.p99_ns)}`;
}

function matches() {
  const s = $('search').value.trim().toLowerCase();
  const all = [...$('graph').querySelectorAll('g.node')];
  if (!s) return [];
  return all.filter((n) => (n.dataset.name || '').toLowerCase().includes(s) ||
    (n.dataset.label || '').toLowerCase().includes(s));
}

function markMatches() {
  const m = new Set(matches());
  for (const n of $('graph').querySelectorAll('g.node'))
    n.classList.toggle('match', m.has(n));
}

function focusNode(name) {
  state.node = name;
  loadGraph();
}

// ---- host matrix ----------------------------------------------------------

async function loadMatrix() {
  setStatus('matrix-status', 'loading', 'loading…');
  const p = new URLSearchParams({ by: 'host' });
  if (state.range) p.set('since', state.range);
  try {
    const m = await getJSON('/api/matrix?' + p);
    let max = 1;
    for (const row of m.bytes) for (const v of row) max = Math.max(max, v);
    // Watched hosts first, then the peers nobody watched, each by name.
    const order = m.names.map((_, i) => i).sort((a, b) =>
      (m.external[a] - m.external[b]) || m.labels[a].localeCompare(m.labels[b]));
    const head = el('tr', {}, el('th', {}, 'from \\ to'),
      ...order.map((i) => el('th', {}, m.labels[i])));
    const rows = order.map((i) => el('tr', {}, el('th', {}, m.labels[i]),
      ...order.map((j) => m.bytes[i][j]).map((v, k) => {
        const j = order[k];
        const a = v ? 0.08 + 0.92 * Math.log1p(v) / Math.log1p(max) : 0;
        const td = el('td', {
          class: i === j ? 'diag' : '',
          title: `${m.labels[i]} → ${m.labels[j]}: ${fmtBytes(v)}`,
          style: `background: rgba(78,121,167,${a.toFixed(3)});` +
            (a > 0.55 ? 'color:#fff' : ''),
        }, v ? fmtBytes(v) : '');
        return td;
      })));
    $('matrix').replaceChildren(el('table', { class: 'matrix' },
      el('thead', {}, head), el('tbody', {}, ...rows)));
    setStatus('matrix-status', 'ready', `${m.names.length} hosts and peers`,
      { hosts: m.names.length });
  } catch (err) {
    setStatus('matrix-status', 'error', String(err.message || err));
  }
}

// ---- causal paths ---------------------------------------------------------

function hopRows(path, scale) {
  const kids = new Map();
  for (const h of path.hops) {
    const k = h.parent === null ? -1 : h.parent;
    if (!kids.has(k)) kids.set(k, []);
    kids.get(k).push(h);
  }
  const rows = [];
  const walk = (parent, depth) => {
    for (const h of kids.get(parent) || []) {
      const d = h.delay_us;
      const left = (100 * d.p10 / scale).toFixed(2);
      const width = Math.max(0.5, 100 * (d.p90 - d.p10) / scale).toFixed(2);
      const med = (100 * d.median / scale).toFixed(2);
      rows.push(el('div', { class: 'hop' + (h.reply ? ' reply' : '') },
        el('span', { style: `padding-left:${depth * 1.2}em` },
          `${h.reply ? '↩ ' : ''}${h.from} → ${h.to}`),
        el('div', { class: 'bar', title: `p10 ${fmtUs(d.p10)}, median ` +
          `${fmtUs(d.median)}, p90 ${fmtUs(d.p90)}` },
          el('div', { class: 'iqr', style: `left:${left}%;width:${width}%` }),
          el('div', { class: 'med', style: `left:${med}%` })),
        el('span', {}, `${fmtUs(d.median)} (${fmtUs(d.p10)}–${fmtUs(d.p90)})`)));
      walk(h.id, depth + 1);
    }
  };
  walk(-1, 0);
  return rows;
}

async function loadPaths() {
  setStatus('paths-status', 'loading', 'loading…');
  try {
    const p = await getJSON('/api/paths');
    const wins = p.windows.slice(-10).reverse();
    const out = [];
    if (wins.length > 1) {
      const trend = el('table', { class: 'list' }, el('tr', {},
        el('th', {}, 'window'), el('th', {}, 'paths'),
        el('th', { class: 'num' }, 'slowest end-to-end')));
      for (const w of wins) {
        const e2e = Math.max(0, ...(w.paths || []).map((x) => x.end_to_end_us));
        trend.append(el('tr', {}, el('td', {}, w.window),
          el('td', {}, (w.paths || []).length), el('td', { class: 'num' }, fmtUs(e2e))));
      }
      out.push(el('h3', {}, 'Over the last windows'), trend);
    }
    for (const w of wins) {
      const box = el('div', { class: 'window' },
        el('h3', {}, `Window ${w.window}` + (w.slot_ns ? ' at ' +
          new Date(w.slot_ns / 1e6).toISOString().slice(11, 19) : '') +
          ` (${w.method || '?'})`));
      for (const path of w.paths || []) {
        const scale = Math.max(1, ...path.hops.map((h) => h.delay_us.p90));
        box.append(el('div', { class: 'path' },
          el('b', {}, `from ${path.root}`),
          ` — end-to-end ${fmtUs(path.end_to_end_us)}` +
          (path.slowest_tier ? `, ${path.slowest_tier} adds the most` : ''),
          ...hopRows(path, scale)));
      }
      out.push(box);
    }
    $('paths').replaceChildren(...out);
    setStatus('paths-status', 'ready', p.windows.length ?
      `${p.windows.length} windows` : 'no paths data (run with --paths)',
      { windows: p.windows.length });
  } catch (err) {
    setStatus('paths-status', 'error', String(err.message || err));
  }
}

// ---- sample runs ----------------------------------------------------------

async function loadRun(name, button) {
  for (const b of $('runs').querySelectorAll('button')) b.classList.remove('on');
  button.classList.add('on');
  try {
    const r = await getJSON('/api/samples?run=' + encodeURIComponent(name));
    const bursts = (dir) => {
      const d = r[dir];
      const t = el('table', { class: 'list' }, el('tr', {},
        el('th', {}, 'start'), el('th', { class: 'num' }, 'length'),
        el('th', { class: 'num' }, 'bytes'), el('th', { class: 'num' }, 'peak'),
        el('th', {}, 'processes')));
      for (const b of d.bursts)
        t.append(el('tr', {},
          el('td', {}, new Date(b.start_us / 1000).toISOString().slice(11, 23)),
          el('td', { class: 'num' }, fmtUs(b.duration_s * 1e6)),
          el('td', { class: 'num' }, fmtBytes(b.bytes)),
          el('td', { class: 'num' }, (b.peak_util * 100).toFixed(0) + '%'),
          el('td', {}, b.processes.map((p) => `${p.comm}[${p.pid}]`).join(', '))));
      return [el('h3', {}, `${dir} bursts: ${d.bursts.length} (over 50% of the ` +
        `${d.reference})`), t];
    };
    $('run').replaceChildren(
      el('h3', {}, `${r.host} ${r.dev}: ${r.nbins} bins of ` +
        fmtUs(r.interval_ns / 1e3)),
      el('img', { src: '/api/samples.svg?run=' + encodeURIComponent(name),
        alt: 'plot of ' + name }),
      ...bursts('egress'), ...bursts('ingress'));
  } catch (err) {
    $('run').replaceChildren(el('p', { 'data-state': 'error' }, String(err.message || err)));
  }
}

async function loadSamples() {
  setStatus('samples-status', 'loading', 'loading…');
  try {
    const s = await getJSON('/api/samples');
    const byHost = new Map();
    for (const r of s.runs) {
      if (!byHost.has(r.host)) byHost.set(r.host, []);
      byHost.get(r.host).push(r);
    }
    const out = [];
    for (const [host, runs] of byHost) {
      out.push(el('h3', {}, host));
      for (const r of runs.reverse()) {
        const b = el('button', { type: 'button', 'data-run': r.name },
          `${new Date(r.start_ms).toISOString().slice(0, 19)} ` +
          `${fmtUs(r.interval_ns / 1e3)} ${r.dev}`);
        b.addEventListener('click', () => loadRun(r.name, b));
        out.push(b);
      }
    }
    $('runs').replaceChildren(...out);
    const from = [s.kafka ? 'Kafka' : '', s.store || ''].filter(Boolean).join(' and ');
    setStatus('samples-status', 'ready', from ? `${s.runs.length} runs from ${from}` :
      'no sample store (--samples DIR)', { runs: s.runs.length });
  } catch (err) {
    setStatus('samples-status', 'error', String(err.message || err));
  }
}

// ---- per-request traces -----------------------------------------------------

// A call linked by timing with less confidence than this is marked.
const LOW_CONFIDENCE = 0.5;
let traceShown = '';

// The same service gets the same colour in every trace.
function serviceColour(name) {
  let h = 0;
  for (const c of name) h = (h * 31 + c.codePointAt(0)) >>> 0;
  return `hsl(${h % 360}, 55%, ${48 + (h >> 9) % 14}%)`;
}

const fmtNs = (ns) => fmtUs(ns / 1e3);

function linkText(s) {
  if (!s.method || s.method === 'connection') return '';
  return s.confidence === null ? s.method :
    `${s.method} ${s.confidence.toFixed(2)}`;
}

function isLow(s) {
  return s.confidence !== null && s.confidence < LOW_CONFIDENCE &&
    s.method !== 'connection';
}

function drawWaterfall(t) {
  const total = Math.max(1, t.duration_ns);
  const rows = t.waterfall.map((s, i) => {
    const left = (100 * s.offset_ns / total).toFixed(3);
    const width = (100 * s.duration_ns / total).toFixed(3);
    const low = isLow(s);
    const bar = el('div', {
      class: 'bar' + (s.critical ? ' critical' : '') + (low ? ' low' : ''),
      style: `left:${left}%;width:${width}%;background-color:` +
        serviceColour(s.service),
      title: `${s.name}: ${fmtNs(s.duration_ns)} from ` +
        `+${fmtNs(s.offset_ns)}` + (linkText(s) ? `, ${linkText(s)}` : ''),
    });
    return el('div', { class: 'wf-row' + (s.critical ? ' critical' : ''),
      'data-row': i, 'data-critical': s.critical, 'data-low': low },
      el('span', { class: 'label', style: `padding-left:${s.depth * 0.9}em`,
        title: s.name },
        el('span', { class: 'swatch',
          style: `background:${serviceColour(s.service)}` }),
        s.name),
      el('div', { class: 'lane' }, bar),
      el('span', { class: 'info' }, fmtNs(s.duration_ns) +
        (linkText(s) ? '  ' + linkText(s) : ''),
        low ? el('span', { class: 'low-mark', title: 'low confidence' }, ' ?') : ''));
  });
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => el('span', {}, fmtNs(f * total)));
  const crit = t.waterfall.filter((s) => s.critical).length;
  $('trace').replaceChildren(
    el('h3', {}, `Trace ${t.trace_id}: ${fmtNs(t.duration_ns)}, ` +
      `${t.spans} spans, ${t.services.length} services`),
    el('div', { class: 'wf' },
      el('div', { class: 'wf-axis' }, el('span', {}, 'span'),
        el('span', { class: 'ticks' }, ...ticks), el('span', {}, 'duration, link')),
      ...rows));
  setStatus('trace-status', 'ready', `${crit} spans on the critical path`,
    { trace: t.trace_id, bars: rows.length, critical: crit });
}

async function loadTrace(id) {
  traceShown = id;
  for (const r of $('traces-list').querySelectorAll('tr[data-trace]'))
    r.classList.toggle('on', r.dataset.trace === id);
  setStatus('trace-status', 'loading', 'loading…');
  try {
    const t = await getJSON('/api/traces?trace=' + encodeURIComponent(id));
    if (traceShown !== id) return;
    drawWaterfall(t);
  } catch (err) {
    if (traceShown !== id) return;
    $('trace').replaceChildren();
    setStatus('trace-status', 'error', String(err.message || err));
  }
}

async function loadTraces() {
  setStatus('traces-status', 'loading', 'loading…');
  try {
    const p = await getJSON('/api/traces?limit=50');
    const head = el('tr', {}, el('th', { class: 'num' }, 'duration'),
      el('th', {}, 'root'), el('th', {}, 'start'), el('th', { class: 'num' }, 'spans'),
      el('th', { class: 'num' }, 'services'), el('th', { class: 'num' }, 'lowest link'),
      el('th', {}, 'links: thread / timing / contained'));
    const rows = p.traces.map((t) => {
      const low = t.min_confidence !== null && t.min_confidence < LOW_CONFIDENCE;
      const r = el('tr', { 'data-trace': t.trace_id },
        el('td', { class: 'num' }, fmtNs(t.duration_ns)),
        el('td', {}, el('span', { class: 'swatch',
          style: `background:${serviceColour(t.service)}` }), t.operation),
        el('td', {}, new Date(t.start_ns / 1e6).toISOString().slice(0, 23).replace('T', ' ')),
        el('td', { class: 'num' }, t.spans),
        el('td', { class: 'num' }, t.services.length),
        el('td', { class: 'num' }, t.min_confidence === null ? '—' :
          t.min_confidence.toFixed(2), low ? el('span', { class: 'low-mark' }, ' ?') : ''),
        el('td', {}, `${t.links.thread} / ${t.links.timing} / ${t.links.contained}`));
      r.addEventListener('click', () => loadTrace(t.trace_id));
      return r;
    });
    $('traces-list').replaceChildren(head, ...rows);
    setStatus('traces-status', 'ready', p.source ?
      `the ${rows.length} slowest of ${p.total} traces from ${p.source}` :
      "no traces (serve --traces FILE, from 'causeway traces -o FILE')",
      { traces: p.total, shown: rows.length });
    if (traceShown && p.traces.some((t) => t.trace_id === traceShown))
      loadTrace(traceShown);
  } catch (err) {
    setStatus('traces-status', 'error', String(err.message || err));
  }
}

// ---- placement plan -------------------------------------------------------

// Container ids are 64 hex digits: the first 12 name them, as docker does.
const shortUnit = (u) => (/^[0-9a-f]{64}$/.test(u) ? u.slice(0, 12) : u);

async function loadPlan() {
  setStatus('plan-status', 'loading', 'loading…');
  try {
    const p = await getJSON('/api/plan');
    if (!p.source) {
      for (const id of ['plan-summary', 'plan-hosts', 'plan-moves']) $(id).replaceChildren();
      setStatus('plan-status', 'ready', 'no plan (serve --plan FILE, from ' +
        "'causeway place --format json')", { hosts: 0, moves: 0 });
      return;
    }
    const cut = p.cross_bytes_now ? 1 - p.cross_bytes / p.cross_bytes_now : 0;
    $('plan-summary').replaceChildren(el('table', { class: 'list' },
      el('tr', {}, el('th', {}, ''), el('th', { class: 'num' }, 'now'),
        el('th', { class: 'num' }, 'after')),
      el('tr', { id: 'plan-cross' }, el('th', {}, 'bytes between hosts'),
        el('td', { class: 'num' }, fmtBytes(p.cross_bytes_now)),
        el('td', { class: 'num' }, fmtBytes(p.cross_bytes) +
          ` (${(cut * 100).toFixed(0)}% less)`)),
      el('tr', {}, el('th', {}, 'hosts used'),
        el('td', { class: 'num' }, p.hosts_used_now),
        el('td', { class: 'num' }, p.hosts_used))));
    const hosts = [el('tr', {}, el('th', {}, 'host'), el('th', {}, 'units now'),
      el('th', {}, 'units after'))];
    for (const h of p.hosts)
      hosts.push(el('tr', { 'data-host': h.host }, el('th', {}, h.host),
        el('td', { class: 'before', 'data-n': h.before.length },
          h.before.map(shortUnit).join(', ') || '—'),
        el('td', { class: 'after', 'data-n': h.after.length },
          h.after.map(shortUnit).join(', ') || '—')));
    $('plan-hosts').replaceChildren(...hosts);
    const moves = [el('tr', {}, el('th', {}, 'unit'), el('th', {}, 'from'),
      el('th', {}, 'to'), el('th', { class: 'num' }, 'saves'))];
    for (const m of p.moves)
      moves.push(el('tr', { class: 'move', 'data-unit': m.unit },
        el('td', {}, shortUnit(m.unit)), el('td', {}, m.from),
        el('td', {}, m.to), el('td', { class: 'num' }, fmtBytes(Math.max(0, m.gain)) +
          (m.gain < 0 ? ` (costs ${fmtBytes(-m.gain)})` : ''))));
    $('plan-moves').replaceChildren(...moves);
    setStatus('plan-status', 'ready', `${p.method} plan from ${p.source}` +
      (p.fits ? '' : ' (does not fit the hosts)'),
      { hosts: p.hosts.length, moves: p.moves.length });
  } catch (err) {
    setStatus('plan-status', 'error', String(err.message || err));
  }
}

// ---- stats ------------------------------------------------------------------

async function loadStats() {
  try {
    const s = await getJSON('/api/stats');
    const rows = Object.entries(s).map(([k, v]) => el('tr', {}, el('th', {}, k),
      el('td', {}, Array.isArray(v) ? v.join(', ') : v)));
    $('stats').replaceChildren(...rows);
    $('updated').textContent = s.updated ?
      'data of ' + new Date(s.updated * 1000).toLocaleTimeString() : '';
    setStatus('stats-status', 'ready', '');
  } catch (err) {
    setStatus('stats-status', 'error', String(err.message || err));
  }
}

// ---- wiring ---------------------------------------------------------------

const loaders = { graph: loadGraph, matrix: loadMatrix, paths: loadPaths,
  samples: loadSamples, traces: loadTraces, plan: loadPlan, stats: loadStats };
let tab = 'graph';

function showTab(name) {
  tab = name;
  for (const b of $('tabs').querySelectorAll('button'))
    b.classList.toggle('on', b.dataset.tab === name);
  for (const s of document.querySelectorAll('.tab'))
    s.classList.toggle('on', s.id === 'tab-' + name);
  loaders[name]();
}

for (const b of $('tabs').querySelectorAll('button'))
  b.addEventListener('click', () => showTab(b.dataset.tab));
$('by').addEventListener('change', () => { state.by = $('by').value; state.node = ''; loadGraph(); });
$('range').addEventListener('change', () => { state.range = $('range').value; loadGraph(); });
$('share').addEventListener('change', () => { state.share = parseFloat($('share').value); loadGraph(); });
$('share').addEventListener('input', () => {
  $('share-out').textContent = (parseFloat($('share').value) * 100).toFixed(1) + '%';
});
$('search').addEventListener('input', markMatches);
$('search').addEventListener('keydown', (ev) => {
  if (ev.key !== 'Enter') return;
  ev.preventDefault();
  const m = matches();
  if (m.length) focusNode(m[0].dataset.name);
});
$('unfocus').addEventListener('click', () => { state.node = ''; loadGraph(); });
$('controls').addEventListener('submit', (ev) => ev.preventDefault());
window.addEventListener('hashchange', () => { loadHash(); loadGraph(); });

loadHash();
loadGraph();
loadStats();
// Live: the data are read again when the inputs change; follow them.
setInterval(() => { loadStats(); if (tab !== 'samples') loaders[tab](); }, 15000);
