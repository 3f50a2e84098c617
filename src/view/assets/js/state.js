// state.js: what the page shows: the traces of the log directory (from /api/runs, polled so a
// running job's new traces appear), the selected trace and view, kept in the URL's hash so a
// reload or a shared link opens the same.
import {get} from './api.js';

const listeners = new Set();
export const state = {
  root: '',
  traces: [],      // /api/runs' traces: id, run, worker, span, span_index, file, state
  trace: null,     // selected id
  view: 'overview',
  params: {},      // the view's own (e.g. diff's other trace)
};

export function onChange(fn) { listeners.add(fn); }
function notify(what) { for (const fn of listeners) fn(what); }

export function traceById(id) { return state.traces.find(t => t.id === id) || null; }
export function runs() { return [...new Set(state.traces.map(t => t.run))]; }
export function workersOf(run) {
  return [...new Set(state.traces.filter(t => t.run === run).map(t => t.worker))];
}
export function spansOf(run, worker) {
  return state.traces.filter(t => t.run === run && t.worker === worker);
}
// The latest window of a run's first worker: what a run opens on (as TensorBoard).
export function latestOf(run, worker) {
  const w = worker || workersOf(run)[0];
  const spans = spansOf(run, w);
  return spans.length ? spans[spans.length - 1] : null;
}
export function label(t) {
  if (!t) return '';
  return `${t.run} / ${t.worker}` + (t.span ? ` / window ${t.span_index}` : '');
}

function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  const out = {};
  for (const [k, v] of p) out[k] = v;
  return out;
}

function writeHash() {
  const p = new URLSearchParams();
  p.set('view', state.view);
  if (state.trace) p.set('trace', state.trace);
  for (const [k, v] of Object.entries(state.params)) if (v !== undefined && v !== null) p.set(k, v);
  const hash = '#' + p.toString();
  if (location.hash !== hash) history.replaceState(null, '', hash);
}

export function select(changes) {
  if (changes.params) state.params = {...changes.params};
  if (changes.view && changes.view !== state.view) {
    state.view = changes.view;
    if (!changes.params) state.params = {};
  }
  if (changes.trace !== undefined) state.trace = changes.trace;
  writeHash();
  notify('selection');
}

export function setParam(key, value) {
  state.params[key] = value;
  writeHash();
}

export async function refresh() {
  const r = await get('runs');
  state.root = r.root;
  const before = state.traces.map(t => t.id + t.state + t.size).join();
  state.traces = r.traces;
  const first = !state.trace;
  if (first) {
    const h = readHash();
    if (h.view) state.view = h.view;
    for (const [k, v] of Object.entries(h)) if (k !== 'view' && k !== 'trace') state.params[k] = v;
    if (h.trace && traceById(h.trace)) state.trace = h.trace;
    else if (state.traces.length) state.trace = latestOf(runs()[0]).id;
    writeHash();
    notify('selection');
  } else if (before !== state.traces.map(t => t.id + t.state + t.size).join()) {
    if (state.trace && !traceById(state.trace) && state.traces.length)
      state.trace = latestOf(runs()[0]).id;
    notify('traces');
  }
}
