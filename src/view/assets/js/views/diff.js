// views/diff.js: two runs or windows compared (ptprof's ReportDiff): the step time and its
// categories before and after, findings that appeared, disappeared or persisted, and the
// operators and kernels that changed most.
import {h, section, fmtUs, fmtPct, CATEGORY_COLORS} from '../dom.js';
import {stackedBars} from '../charts.js';
import {dataTable} from '../table.js';
import {get} from '../api.js';
import {state, select as choose, label, runs, latestOf, traceById} from '../state.js';

export async function render(main, trace) {
  const a = traceById(state.params.a) || trace;
  let b = traceById(state.params.b);
  if (!b && a) {
    const others = runs().filter(r => r !== a.run);
    b = others.length ? latestOf(others[0]) : state.traces.find(t => t.id !== a.id) || null;
  }
  const pick = (which, current) => {
    const sel = h('select', {'data-testid': `diff-${which}`},
      state.traces.map(t => h('option', {value: t.id, text: label(t), selected: current && t.id === current.id})));
    sel.addEventListener('change', () => choose({params: {...state.params, a: a && a.id, b: b && b.id, [which]: sel.value}}));
    return sel;
  };
  const view = h('div', {class: 'view', 'data-testid': 'view-diff'});
  main.append(view);
  view.append(section('Compare', h('div', {class: 'controls'},
    h('label', {}, 'Baseline ', pick('a', a)), h('label', {}, 'Experimental ', pick('b', b)))));
  if (!a || !b) {
    view.append(h('p', {class: 'muted', text: 'Two traces are needed to compare.'}));
    return;
  }
  const d = await get('diff', {a: a.id, b: b.id});
  const st = d.steps;
  const perStep = d.unit === 'step';
  if (d.notes.length)
    view.append(section('Notes', h('ul', {'data-testid': 'diff-notes'}, d.notes.map(n => h('li', {text: n})))));
  if (st.compared) {
    const parts = which => Object.fromEntries(st.categories.map(c => [c.category, c.time[which]]));
    view.append(section(`Step time (${perStep ? 'per step' : 'per trace'})`,
      h('p', {'data-testid': 'diff-step'},
        `${fmtUs(st.step.before_us)} → ${fmtUs(st.step.after_us)}: ${st.step.delta_us >= 0 ? '+' : ''}${fmtUs(st.step.delta_us)}`,
        st.step.relative !== null ? ` (${st.step.relative >= 0 ? '+' : ''}${fmtPct(st.step.relative)})` : ''),
      st.profiler_cost ? h('p', {'data-testid': 'diff-own-cost', class: 'muted'},
        `ptprof's own cost (a lower bound): ${fmtUs(st.profiler_cost.before_us)} → ${fmtUs(st.profiler_cost.after_us)}, ` +
        `a change of ${st.profiler_cost.delta_us >= 0 ? '+' : ''}${fmtUs(st.profiler_cost.delta_us)} within the step's`) : null,
      stackedBars({testid: 'diff-chart', categories: st.categories.map(c => c.category).sort(
        (x, y) => Object.keys(CATEGORY_COLORS).indexOf(x) - Object.keys(CATEGORY_COLORS).indexOf(y)),
        colors: CATEGORY_COLORS, height: 220,
        bars: [{label: 'baseline', parts: parts('before_us')}, {label: 'experimental', parts: parts('after_us')}]}),
      dataTable({testid: 'diff-categories', rows: st.categories, filterKeys: ['category'], pageSize: 20, columns: [
        {key: 'category', label: 'Category'},
        {key: 'before', label: 'Baseline', num: true, value: r => r.time.before_us, fmt: fmtUs},
        {key: 'after', label: 'Experimental', num: true, value: r => r.time.after_us, fmt: fmtUs},
        {key: 'delta', label: 'Change', num: true, value: r => r.time.delta_us, fmt: fmtUs},
        {key: 'share', label: 'Of the step', num: true, value: r => r.share_of_step, fmt: v => fmtPct(v)}]})));
  }
  view.append(section('Findings', d.findings.length
    ? h('ul', {class: 'diff-findings', 'data-testid': 'diff-findings'}, d.findings.map(f =>
        h('li', {'data-testid': 'diff-finding', 'data-id': f.id, 'data-status': f.status},
          h('span', {class: `tag status-${f.status}`, text: f.status}), ' ', f.title,
          h('span', {class: 'muted', text: ` (saving ${fmtUs(f.saving_before_us)} → ${fmtUs(f.saving_after_us)})`}))))
    : h('p', {class: 'muted', text: 'No finding in either run.'})));
  const time = key => ({key, label: key.replace('_', ' '), num: true, value: r => r[key].delta_us, fmt: fmtUs});
  view.append(section(`Operators, by change (${d.operators_below_floor} below the noise floor left out)`,
    dataTable({testid: 'diff-operators', rows: d.operators, sortKey: 'impact_us', pageSize: 25, columns: [
      {key: 'name', label: 'Operator'}, {key: 'presence', label: 'In'},
      {key: 'impact_us', label: 'Impact', num: true, fmt: fmtUs},
      {key: 'calls', label: 'Calls (change)', num: true, value: r => r.calls.delta},
      time('self_cpu'), time('cpu_total'), time('self_device'), time('device_total')]})));
  view.append(section(`Kernels, by change (${d.kernels_below_floor} below the noise floor left out)`,
    dataTable({testid: 'diff-kernels', rows: d.kernels, sortKey: 'impact_us', pageSize: 25, columns: [
      {key: 'name', label: 'Kernel'}, {key: 'presence', label: 'In'},
      {key: 'impact_us', label: 'Impact', num: true, fmt: fmtUs},
      {key: 'calls', label: 'Calls (change)', num: true, value: r => r.calls.delta},
      {key: 'total', label: 'Total (change)', num: true, value: r => r.total.delta_us, fmt: fmtUs}]})));
}
