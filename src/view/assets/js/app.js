// app.js: the page: the run / worker / window selectors, the view tabs, and the view shown.
import {h, clear, errorPanel} from './dom.js';
import {state, onChange, refresh, select, runs, workersOf, spansOf, latestOf, traceById} from './state.js';
import * as overview from './views/overview.js';
import * as operators from './views/operators.js';
import * as kernels from './views/kernels.js';
import * as timeline from './views/trace.js';
import * as memory from './views/memory.js';
import * as distributed from './views/distributed.js';
import * as diff from './views/diff.js';
import * as flame from './views/flame.js';

const VIEWS = [
  ['overview', 'Overview', overview],
  ['operators', 'Operators', operators],
  ['kernels', 'GPU Kernels', kernels],
  ['trace', 'Trace', timeline],
  ['memory', 'Memory', memory],
  ['distributed', 'Distributed', distributed],
  ['diff', 'Diff', diff],
  ['flame', 'Flame Graph', flame],
];

const $ = id => document.getElementById(id);
let generation = 0;
let shown = '';  // what the main area shows: view + trace + params

function options(sel, items, selected) {
  clear(sel);
  for (const [value, text] of items) sel.append(h('option', {value, text, selected: value === selected}));
}

function renderBar() {
  const t = traceById(state.trace);
  const run = t ? t.run : runs()[0];
  options($('sel-run'), runs().map(r => [r, r]), run);
  const worker = t ? t.worker : workersOf(run)[0];
  options($('sel-worker'), workersOf(run).map(w => [w, w]), worker);
  options($('sel-span'), spansOf(run, worker).map(s => [s.id, s.span ? String(s.span_index) : s.file]), state.trace);
  const nav = clear($('tabs'));
  for (const [id, label] of VIEWS) {
    const a = h('a', {href: '#', class: id === state.view ? 'tab active' : 'tab', 'data-testid': `tab-${id}`, text: label});
    a.addEventListener('click', e => { e.preventDefault(); select({view: id}); });
    nav.append(a);
  }
}

async function renderView(force) {
  const key = state.view + '|' + state.trace + '|' + JSON.stringify(state.params);
  if (!force && key === shown) return;
  shown = key;
  const my = ++generation;
  const main = $('main');
  const t = traceById(state.trace);
  const view = (VIEWS.find(v => v[0] === state.view) || VIEWS[0])[2];
  const target = h('div', {class: 'view-host'});
  clear(main).append(h('p', {class: 'muted', 'data-testid': 'loading', text: 'Loading…'}));
  if (!t && state.view !== 'diff') {
    clear(main).append(h('p', {class: 'muted', 'data-testid': 'no-traces',
      text: `No trace in ${state.root || 'this directory'} yet: traces appear here as they are written.`}));
    return;
  }
  try {
    await view.render(target, t);
  } catch (e) {
    target.append(errorPanel(e.message || String(e), e.file || (t && t.file)));
  }
  if (my !== generation) return;  // a newer selection is being shown
  clear(main).append(target);
}

function wire() {
  $('sel-run').addEventListener('change', e => {
    const t = latestOf(e.target.value);
    if (t) select({trace: t.id});
  });
  $('sel-worker').addEventListener('change', e => {
    const current = traceById(state.trace);
    const t = current && latestOf(current.run, e.target.value);
    if (t) select({trace: t.id});
  });
  $('sel-span').addEventListener('change', e => select({trace: e.target.value}));
  onChange(what => {
    renderBar();
    renderView(false);
  });
}

async function poll() {
  try {
    await refresh();
  } catch (e) {
    $('status').textContent = 'server unreachable';
  }
  setTimeout(poll, 5000);
}

wire();
poll();
