// views/trace.js: the Trace view: the timeline (timeline.js), search, and the details pane of
// the selected slice: its event as the trace file has it, and the other end of its launch flow.
import {h, clear, fmtNs, section} from '../dom.js';
import {get} from '../api.js';
import {Timeline} from '../timeline.js';

let current = null;  // the live Timeline: its window listeners go when another replaces it

export async function render(main, trace) {
  if (current) { current.destroy(); current = null; }
  const meta = await get('timeline', {trace: trace.id});
  const canvas = h('canvas', {class: 'tl-canvas', 'data-testid': 'timeline-canvas', tabindex: 0});
  const host = h('div', {class: 'tl-host'}, canvas);
  const windowLabel = h('span', {class: 'muted', 'data-testid': 'timeline-window'});
  const details = h('div', {class: 'tl-details', 'data-testid': 'details'},
    h('p', {class: 'muted', text: 'Click a slice for its details. Ctrl+wheel or W/S zooms, drag or A/D pans, shift+drag measures.'}));
  const results = h('div', {class: 'tl-results', 'data-testid': 'search-results'});
  const search = h('input', {type: 'search', placeholder: 'Search slices by name (Enter)', 'data-testid': 'timeline-search', class: 'filter'});
  const button = (label, testid, fn) => {
    const b = h('button', {text: label, 'data-testid': testid});
    b.addEventListener('click', fn);
    return b;
  };
  const view = h('div', {class: 'view', 'data-testid': 'view-trace'},
    h('div', {class: 'controls'},
      search,
      button('Zoom in', 'zoom-in', () => tl.zoom(0.5)),
      button('Zoom out', 'zoom-out', () => tl.zoom(2)),
      button('Whole trace', 'zoom-reset', () => tl.reset()),
      windowLabel,
      h('span', {class: 'muted', text: `${meta.slices} slices, ${meta.tracks.length} tracks, ${meta.flows} launch flows${meta.fwdbwd_flows ? `, ${meta.fwdbwd_flows} forward/backward links` : ''}`})),
    h('div', {class: 'tl-layout'}, host, h('div', {class: 'tl-side'}, results, details)));
  main.append(view);
  const trackName = id => {
    const t = meta.tracks.find(t => t.id === id);
    return t ? `${t.group} / ${t.name}` : String(id);
  };
  const tl = new Timeline({
    canvas, host, traceId: trace.id, meta,
    onWindow: (t0, t1) => { windowLabel.textContent = `${fmtNs(t0)} – ${fmtNs(t1)} (${fmtNs(t1 - t0)})`; },
    onSelect: ev => showDetails(details, ev, trackName, tl),
  });
  current = tl;
  windowLabel.textContent = `${fmtNs(0)} – ${fmtNs(meta.end_ns)} (${fmtNs(meta.end_ns)})`;
  // Layout is known only once the view is in the document.
  requestAnimationFrame(() => tl.resize());
  search.addEventListener('keydown', async e => {
    if (e.key !== 'Enter') return;
    const q = search.value.trim();
    clear(results);
    if (!q) return;
    const r = await get('timeline/search', {trace: trace.id, q, limit: 200});
    results.append(h('div', {class: 'muted', 'data-testid': 'search-count',
      text: `${r.total} slice${r.total === 1 ? '' : 's'} named like "${q}"` + (r.total > r.matches.length ? `, the first ${r.matches.length} shown` : '')}));
    const list = h('ol', {class: 'tl-hits'});
    for (const m of r.matches) {
      const li = h('li', {'data-testid': 'search-result', 'data-id': m.id},
        h('span', {class: 'hit-name', text: m.name}), ' ', h('span', {class: 'muted', text: `at ${fmtNs(m.start_ns)}, ${fmtNs(m.dur_ns)}`}));
      li.addEventListener('click', () => {
        tl.focus(m.start_ns, m.dur_ns, m.track, m.depth);
        tl.select(m);
      });
      list.append(li);
    }
    results.append(list);
  });
}

function showDetails(el, ev, trackName, tl) {
  clear(el);
  if (!ev) { el.append(h('p', {class: 'muted', text: 'Nothing selected.'})); return; }
  const rows = [
    ['Name', ev.name, 'detail-name'],
    ['Category', ev.cat, 'detail-cat'],
    ['Start', fmtNs(ev.start_ns), 'detail-start'],
    ['Duration', (ev.dur_ns / 1000).toFixed(3) + ' us', 'detail-dur'],
  ];
  if (ev.self_ns !== undefined) rows.push(['Self', (ev.self_ns / 1000).toFixed(3) + ' us', 'detail-self']);
  rows.push(['Track', trackName(ev.track), 'detail-track']);
  const table = h('table', {class: 'kv'}, rows.map(([k, v, id]) => h('tr', {}, h('th', {text: k}), h('td', {text: v, 'data-testid': id}))));
  const args = h('table', {class: 'kv args', 'data-testid': 'detail-args'},
    Object.entries(ev.args || {}).map(([k, v]) => h('tr', {}, h('th', {text: k}),
      h('td', {text: typeof v === 'string' ? v : JSON.stringify(v)}))));
  el.append(section('Selected', table, h('h3', {text: 'Args'}), args));
  if (ev.flow) {
    const f = ev.flow;
    const link = h('a', {href: '#', 'data-testid': 'detail-flow', text: `${f.name} (${(f.dur_ns / 1000).toFixed(3)} us at ${fmtNs(f.start_ns)})`});
    link.addEventListener('click', e => {
      e.preventDefault();
      tl.focus(Math.min(f.start_ns, ev.start_ns), Math.abs(f.start_ns - ev.start_ns) + f.dur_ns, f.track, f.depth);
      tl.select(f);
    });
    // A launch's flow goes to its GPU activity and back; an op's is autograd's link between
    // its forward op and its backward node.
    const op = ev.cat === 'cpu_op' || ev.cat === 'user_annotation';
    const title = op ? (f.start_ns > ev.start_ns ? 'Its backward' : 'Its forward')
      : ev.cat === 'cuda_runtime' || ev.cat === 'cuda_driver' ? 'Launched' : 'Launched by';
    el.append(section(title, link));
  }
}
