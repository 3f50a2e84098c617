// views/memory.js: TensorBoard's Memory view: per device, allocated and reserved bytes over
// time (the timeline's memory counters, at the chart's resolution: the highest value of each
// pixel) with drag-to-zoom, and the allocation table (each allocation, the op that made it,
// when it was made and freed), sorted, searched and paged by the server.
import {h, section, fmtBytes, fmtNs} from '../dom.js';
import {dataTable} from '../table.js';
import {stepChart} from '../charts.js';
import {get} from '../api.js';
import {state, setParam} from '../state.js';

export async function render(main, trace) {
  const meta = await get('timeline', {trace: trace.id});
  const view = h('div', {class: 'view', 'data-testid': 'view-memory'});
  main.append(view);
  if (!meta.counters.length) {
    view.append(section('Memory', h('p', {class: 'muted', 'data-testid': 'no-memory',
      text: 'This trace has no memory events (record with profile_memory).'})));
    return;
  }
  let device = Math.min(Number(state.params.device || 0), meta.counters.length - 1);
  let t0 = 0, t1 = Math.max(1, meta.end_ns);
  const select = h('select', {'data-testid': 'memory-device'},
    meta.counters.map(c => h('option', {value: c.id, text: c.device, selected: c.id === device})));
  const peaks = h('p', {'data-testid': 'memory-peaks'});
  const chart = h('div');
  const table = h('div');
  view.append(section('Memory over time',
    h('div', {class: 'controls'}, h('label', {}, 'Device ', select), peaks,
      h('span', {class: 'muted', text: 'Drag across the chart to zoom (the table follows), double-click to reset.'})),
    chart));
  view.append(section('Allocations', table));

  const range = {min: '', max: ''};
  async function drawChart() {
    const c = meta.counters[device];
    peaks.textContent = `Peak allocated ${fmtBytes(c.peak_allocated)}, peak reserved ${fmtBytes(c.peak_reserved)}, ${c.points} memory events`;
    const r = await get('timeline/counters', {trace: trace.id, t0: Math.floor(t0), t1: Math.ceil(t1), px: 900});
    const k = r.counters.find(k => k.id === c.id);
    const xs = [t0, ...k.t], alloc = [k.before_allocated, ...k.max], reserved = [k.before_reserved, ...k.reserved];
    chart.replaceChildren(stepChart({
      testid: 'memory-chart', x0: t0, x1: t1, fmtX: fmtNs, fmtY: fmtBytes,
      series: [{name: 'Allocated', color: '#4e79a7', xs, ys: alloc}, {name: 'Reserved', color: '#f28e2b', xs, ys: reserved}],
      onZoom: (a, b) => {
        if (a === null) { t0 = 0; t1 = Math.max(1, meta.end_ns); } else { t0 = a; t1 = b; }
        drawChart();
        drawTable();
      }}));
  }
  function drawTable() {
    const zoomed = t0 > 0 || t1 < meta.end_ns;
    const min = h('input', {type: 'number', placeholder: 'min KB', value: range.min, 'data-testid': 'alloc-min'});
    const max = h('input', {type: 'number', placeholder: 'max KB', value: range.max, 'data-testid': 'alloc-max'});
    let timer = 0;
    for (const i of [min, max])
      i.addEventListener('input', () => {
        clearTimeout(timer);
        timer = setTimeout(() => { range.min = min.value; range.max = max.value; drawTable(); }, 300);
      });
    const t = dataTable({
      testid: 'alloc', sortKey: 'bytes', pageSize: 50, placeholder: 'Search by operator',
      remote: q => get('memory', {trace: trace.id, device, ...q,
        min_bytes: range.min !== '' ? Math.round(Number(range.min) * 1024) : undefined,
        max_bytes: range.max !== '' ? Math.round(Number(range.max) * 1024) : undefined,
        t0: zoomed ? Math.floor(t0) : undefined, t1: zoomed ? Math.ceil(t1) : undefined}),
      columns: [
        {key: 'op', label: 'Operator', fmt: v => v || '(no op)'},
        {key: 'bytes', label: 'Size', num: true, fmt: fmtBytes},
        {key: 'alloc_ns', label: 'Allocation Time', num: true, fmt: fmtNs},
        {key: 'free_ns', label: 'Release Time', num: true, fmt: v => (v === null ? 'not freed' : fmtNs(v))},
        {key: 'duration_ns', label: 'Duration', num: true, fmt: v => (v === null ? '—' : fmtNs(v))}]});
    table.replaceChildren(h('div', {class: 'controls'}, h('span', {class: 'muted', text: 'Size (KB) from'}), min,
                                   h('span', {class: 'muted', text: 'to'}), max), t);
    return t.ready;
  }
  select.addEventListener('change', () => {
    device = Number(select.value);
    setParam('device', device);
    drawChart();
    drawTable();
  });
  await Promise.all([drawChart(), drawTable()]);
}
