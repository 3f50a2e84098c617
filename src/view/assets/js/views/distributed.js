// views/distributed.js: the ranks of the selected run side by side (ptprof's cross-rank
// report: at each collective every rank's arrival and wait, the straggler and what it ran
// meanwhile), and each rank's computation/communication overlap per step (TensorBoard's
// Distributed view, from each rank's Report).
import {h, section, fmtUs, fmtNs} from '../dom.js';
import {stackedBars} from '../charts.js';
import {dataTable} from '../table.js';
import {get} from '../api.js';
import {state} from '../state.js';

const OVERLAP = ['Computation', 'Overlapping', 'Communication', 'Other'];
const OVERLAP_COLORS = {Computation: '#4e79a7', Overlapping: '#59a14f', Communication: '#76b7b2', Other: '#bab0ac'};

export async function render(main, trace) {
  const view = h('div', {class: 'view', 'data-testid': 'view-distributed'});
  main.append(view);
  const workers = [...new Set(state.traces.filter(t => t.run === trace.run).map(t => t.worker))];
  if (workers.length < 2) {
    view.append(section('Distributed', h('p', {class: 'muted', 'data-testid': 'not-distributed',
      text: `Run ${trace.run} has one worker: nothing to compare across ranks.`})));
    return;
  }
  const x = await get('distributed', {run: trace.run});
  if (x.not_ranks) {
    view.append(section('Distributed', h('p', {class: 'muted', 'data-testid': 'not-distributed',
      text: `The workers of ${trace.run} are not compared as ranks of one job: ${x.not_ranks}`})));
    return;
  }
  view.append(section(`Ranks of ${trace.run}`,
    h('p', {class: 'muted', text: `world size ${x.world_size}; ${x.steps} step(s) every rank recorded; collectives compared: ${x.collective_kind || 'none'}` +
      (x.missing_ranks.length ? `; missing ranks: ${x.missing_ranks.join(', ')}` : '')}),
    dataTable({testid: 'ranks', rows: x.ranks, filterKeys: ['file', 'host'], pageSize: 64, sortKey: 'rank', desc: false, columns: [
      {key: 'rank', label: 'Rank', num: true}, {key: 'host', label: 'Host'},
      {key: 'file', label: 'Trace', value: r => r.file.split('/').pop()},
      {key: 'offset_ns', label: 'Clock offset', num: true, fmt: fmtNs}, {key: 'alignment', label: 'Aligned by'}]})));

  // Per rank, the overlap of its steps, from its own trace's Report (each indexed as needed).
  const byFile = new Map(state.traces.filter(t => t.run === trace.run).map(t => [t.file.split('/').pop(), t]));
  const bars = [];
  for (const r of x.ranks) {
    const t = byFile.get(r.file.split('/').pop());
    if (!t) continue;
    const o = await get('overview', {trace: t.id});
    const per = o.report.comm_overlap.per_step;
    if (!per.length) continue;
    const avg = k => per.reduce((a, s) => a + s[k], 0) / per.length;
    bars.push({label: `rank ${r.rank}`, parts: {Computation: avg('computation_us'), Overlapping: avg('overlap_us'),
                                                 Communication: avg('communication_us'), Other: avg('other_us')},
               basis: o.report.comm_overlap.basis});
  }
  if (bars.length)
    view.append(section('Computation / Communication (average per step)',
      stackedBars({bars, categories: OVERLAP, colors: OVERLAP_COLORS, testid: 'overlap-chart'}),
      h('p', {class: 'muted', text: bars[0].basis === 'kernels'
        ? 'Computation: kernels that are not collectives; communication: collective kernels and ops.'
        : 'No kernels: computation is host ops (TensorBoard\'s CPU Exec), communication the collective ops.'})));

  if (x.stragglers.length)
    view.append(section('Stragglers', dataTable({testid: 'stragglers', rows: x.stragglers, filterKeys: ['cause'], sortKey: 'lost_ns', columns: [
      {key: 'rank', label: 'Rank', num: true}, {key: 'collectives', label: 'Collectives held up', num: true},
      {key: 'lost_ns', label: 'Others lost', num: true, fmt: fmtNs},
      {key: 'cause', label: 'What it ran meanwhile'}, {key: 'cause_ns', label: 'for', num: true, fmt: fmtNs}]})));

  const ranks = x.ranks.map(r => r.rank);
  const columns = [
    {key: 'step', label: 'Step', num: true}, {key: 'name', label: 'Collective'}, {key: 'index', label: '#', num: true},
    {key: 'straggler', label: 'Straggler', num: true, fmt: v => (v < 0 ? 'none' : String(v))},
    {key: 'late_ns', label: 'Late by', num: true, fmt: fmtNs}, {key: 'lost_ns', label: 'Others lost', num: true, fmt: fmtNs},
    {key: 'cause', label: 'Straggler ran'}];
  for (const rk of ranks) {
    columns.push({key: `arrival${rk}`, label: `rank ${rk} arrival`, num: true,
                  value: c => (c.ranks.find(a => a.rank === rk) || {}).arrival_ns, fmt: v => (v === undefined ? '—' : fmtNs(v))});
    columns.push({key: `wait${rk}`, label: `rank ${rk} wait`, num: true,
                  value: c => (c.ranks.find(a => a.rank === rk) || {}).wait_ns, fmt: v => (v === undefined ? '—' : fmtNs(v))});
  }
  view.append(section(`Collectives (${x.collectives.length})`,
    dataTable({testid: 'collectives', rows: x.collectives, filterKeys: ['name', 'cause'], pageSize: 50, columns})));
  if (x.notes.length) view.append(section('Notes', h('ul', {}, x.notes.map(n => h('li', {text: n})))));
}
