// views/overview.js: TensorBoard's Overview from the Report: configuration, GPU summary,
// execution summary, the step-time breakdown per step, findings with their evidence and
// recommendations, trace quality, and the top operators and kernels as the report lists them.
import {h, section, fmtUs, fmtPct, fmtBytes, fmtNum, CATEGORY_COLORS} from '../dom.js';
import {stackedBars, shareBar} from '../charts.js';
import {dataTable} from '../table.js';
import {get} from '../api.js';

export async function render(main, trace) {
  const o = await get('overview', {trace: trace.id});
  const r = o.report;
  const steps = r.steps;
  const cats = steps.categories;
  const avg = steps.average_us || {};
  const out = [];

  const top = r.findings && r.findings.length ? r.findings[0] : null;
  out.push(h('div', {class: 'tiles'},
    tile('Steps', steps.has_steps ? String(steps.per_step.length) : 'none', 'tile-steps'),
    tile('Average step', steps.determined ? fmtUs(avg.Total) : '—', 'tile-step-time'),
    r.gpu.has_gpu_data ? tile('GPU utilization', fmtPct(r.gpu.devices.length ? r.gpu.devices[0].utilization : null), 'tile-gpu-util') : null,
    r.profiler_cost ? tile("ptprof's own cost", `≥ ${fmtUs(r.profiler_cost.per_step_us)} / step`, 'tile-own-cost') : null,
    tile('Quality notes', String(r.quality.length), 'tile-quality'),
    tile('Top finding', top ? top.title : 'none', 'tile-top-finding')));

  out.push(section('Configuration', h('table', {class: 'kv', 'data-testid': 'configuration'},
    kv('File', o.file), kv('Worker', trace.worker), kv('Process', `${o.source.process_name} (pid ${o.source.pid})`),
    kv('Window', `${fmtUs((o.source.window_end_ns - o.source.window_start_ns) / 1000)}, window ${o.source.window_index}`),
    kv('Events', `${o.source.events} (and ${o.source.memory_events} memory events)`),
    kv('Device type', r.gpu.has_gpu_data || o.devices.length ? 'GPU' : 'CPU'),
    r.profiler_cost ? kv("ptprof's own cost", ownCost(r.profiler_cost)) : null)));

  if (r.gpu.has_gpu_data || o.devices.length) {
    const props = new Map(o.devices.map(d => [d.id, d]));
    const rows = r.gpu.devices.map(d => ({...d, props: props.get(d.id) || {}}));
    out.push(section('GPU Summary', dataTable({
      testid: 'gpu-summary', rows, filterKeys: ['name'], sortKey: null,
      columns: [
        {key: 'id', label: 'GPU', num: true},
        {key: 'name', label: 'Name'},
        {key: 'memory', label: 'Memory', value: d => d.props.total_memory_bytes ?? d.total_memory_bytes, fmt: fmtBytes, num: true},
        {key: 'cc', label: 'Compute Capability', value: d => d.props.compute_capability || '—'},
        {key: 'utilization', label: 'GPU Utilization', num: true, fmt: v => fmtPct(v),
         title: 'TB: time some kernel ran / steps\' time'},
        {key: 'sm_efficiency', label: 'Est. SM Efficiency', num: true, fmt: v => fmtPct(v)},
        {key: 'achieved_occupancy_pct', label: 'Est. Achieved Occupancy', num: true, fmt: v => v === null ? '—' : fmtNum(v) + '%'},
        {key: 'tensor_core_share', label: 'Tensor Core kernel time', num: true, fmt: v => fmtPct(v)},
        {key: 'peak_allocated_bytes', label: 'Peak allocated', num: true, fmt: fmtBytes},
      ]})));
  }

  if (steps.determined) {
    const total = avg.Total || 0;
    const rows = cats.map(c => ({category: c, us: avg[c] || 0, share: total ? (avg[c] || 0) / total : 0}));
    out.push(section('Execution Summary (average per step)',
      shareBar(rows.map(x => ({label: x.category, value: x.us, color: CATEGORY_COLORS[x.category]})), 'execution-share'),
      dataTable({testid: 'execution-summary', rows, filterKeys: ['category'], pageSize: 20,
        columns: [
          {key: 'category', label: 'Category'},
          {key: 'us', label: 'Time Duration (us)', num: true, fmt: v => v.toFixed(3)},
          {key: 'share', label: 'Percentage (%)', num: true, fmt: v => (v * 100).toFixed(2)},
        ]})));
    const bars = steps.per_step.map(st => ({label: st.name, parts: st.categories_us, outlier: st.outlier}));
    out.push(section('Step Time Breakdown',
      stackedBars({bars, categories: cats, colors: CATEGORY_COLORS, testid: 'step-chart'}),
      steps.trimmed.length ? h('p', {class: 'muted', text: `Steps left out by TensorBoard's tail trimming: ${steps.trimmed.join(', ')}`}) : null));
  } else {
    out.push(section('Step Time Breakdown', h('p', {class: 'muted', text: 'cannot be determined: ' +
      (r.undetermined.find(u => u.what === 'breakdown') || {why: 'no steps'}).why})));
  }

  out.push(section('Findings and recommendations', findings(r.findings)));

  out.push(section('Trace quality', r.quality.length || r.undetermined.length
    ? h('ul', {class: 'quality', 'data-testid': 'quality'},
        r.quality.map(q => h('li', {}, h('b', {text: q.id}), ': ', q.message,
                                     q.affects.length ? h('span', {class: 'muted', text: ` (limits: ${q.affects.join(', ')})`}) : null)),
        r.undetermined.map(u => h('li', {}, h('b', {text: u.what}), ': cannot be determined, ', u.why)))
    : h('p', {class: 'muted', 'data-testid': 'quality', text: 'Nothing limits the findings.'})));

  const opColumns = [
    {key: 'name', label: 'Name'},
    {key: 'calls', label: 'Calls', num: true},
    {key: 'self_cpu_us', label: 'Host Self', num: true, fmt: fmtUs},
    {key: 'cpu_total_us', label: 'Host Total', num: true, fmt: fmtUs},
    {key: 'self_device_us', label: 'Device Self', num: true, fmt: fmtUs},
    {key: 'device_total_us', label: 'Device Total', num: true, fmt: fmtUs},
  ];
  out.push(section('Top operators (by self host time)',
    dataTable({testid: 'top-ops-cpu', rows: r.top_operators.by_self_cpu, columns: opColumns, pageSize: 10})));
  if (r.top_operators.by_self_device.length)
    out.push(section('Top operators (by self device time)',
      dataTable({testid: 'top-ops-device', rows: r.top_operators.by_self_device, columns: opColumns, pageSize: 10})));
  if (r.top_kernels.length)
    out.push(section('Top kernels', dataTable({testid: 'top-kernels', rows: r.top_kernels, pageSize: 10, columns: [
      {key: 'name', label: 'Name'}, {key: 'calls', label: 'Calls', num: true},
      {key: 'total_us', label: 'Total', num: true, fmt: fmtUs},
      {key: 'achieved_occupancy_pct', label: 'Occupancy %', num: true, fmt: v => fmtNum(v)},
      {key: 'blocks_per_sm', label: 'Blocks/SM', num: true, fmt: v => fmtNum(v)}]})));
  if (r.idle_causes.determined)
    out.push(section('Why the GPU sat idle inside steps', dataTable({testid: 'idle-causes', pageSize: 10,
      rows: r.idle_causes.causes.filter(c => c.total_us > 0), filterKeys: ['cause'], sortKey: 'total_us', columns: [
        {key: 'cause', label: 'Host was in'}, {key: 'per_step_us', label: 'Per step', num: true, fmt: fmtUs},
        {key: 'total_us', label: 'Total', num: true, fmt: fmtUs}, {key: 'gaps', label: 'Gaps', num: true},
        {key: 'top', label: 'Where', value: c => c.top.map(t => t.name).join(', ')}]})));
  main.append(h('div', {class: 'view', 'data-testid': 'view-overview'}, out));
}

function tile(label, value, testid) {
  return h('div', {class: 'tile', 'data-testid': testid}, h('div', {class: 'tile-label', text: label}),
           h('div', {class: 'tile-value', text: value}));
}

// A lower bound: op_ns is calibrated with warm caches (docs/report.md).
function ownCost(c) {
  let how = `${fmtNum(c.ops_per_step)} ops × ${fmtNum(c.op_ns)} ns`;
  if (c.launch_ns != null) how += ` + ${fmtNum(c.launches_per_step)} launches × ${fmtNum(c.launch_ns)} ns`;
  else if (c.launches_per_step > 0) how += ` (${fmtNum(c.launches_per_step)} launches, not charged: their cost was not measured)`;
  return `at least ${fmtUs(c.per_step_us)} per step (${fmtPct(c.share_of_step)}): ${how}, calibrated in the ` +
         `recording process; without the profiler a step takes at most ${fmtUs(c.unprofiled_step_us)}`;
}

function kv(k, v) {
  return h('tr', {}, h('th', {text: k}), h('td', {text: v}));
}

function findings(list) {
  if (!list.length) return h('p', {class: 'muted', 'data-testid': 'findings', text: 'No finding: no rule fired.'});
  return h('ol', {class: 'findings', 'data-testid': 'findings'}, list.map(f => h('li', {'data-testid': 'finding', 'data-id': f.id},
    h('div', {class: 'finding-title'}, h('span', {class: 'tag', text: f.source === 'tensorboard' ? 'TB' : 'ptprof'}), ' ', f.title),
    f.saving_us_per_step !== null
      ? h('div', {class: 'muted', text: `up to ${fmtUs(f.saving_us_per_step)} per step (${fmtPct(f.saving_share)}), an upper bound`})
      : null,
    f.evidence.length ? h('table', {class: 'evidence'}, h('tr', {}, h('th', {text: 'Evidence'}), h('th', {text: 'Per step'}), h('th', {text: 'Time per step'}), h('th', {text: 'Of step'})),
      f.evidence.map(e => h('tr', {}, h('td', {text: e.what + (e.note ? ` (${e.note})` : '')}), h('td', {class: 'num', text: fmtNum(e.per_step)}),
                                      h('td', {class: 'num', text: fmtUs(e.us_per_step)}), h('td', {class: 'num', text: fmtPct(e.share_of_step)})))) : null,
    h('div', {class: 'recommendation'}, h('b', {text: 'What to do: '}), f.recommendation))));
}
