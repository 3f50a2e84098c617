// views/operators.js: TensorBoard's Operator view: every operator with its calls and its self
// and total host and device time, grouped by name (the report's rows), by input shape or by
// stack (key_averages' groupings), sorted, searched and paged by the server; an operator opens
// to the kernels (and copies, memsets) it launched and to its stacks.
import {h, section, fmtNum} from '../dom.js';
import {dataTable} from '../table.js';
import {get} from '../api.js';
import {state, setParam} from '../state.js';

const GROUPS = [['name', 'Operator'], ['shape', 'Operator + Input Shape'], ['stack', 'Operator + Stack']];
const us = v => v.toFixed(3);

export async function render(main, trace) {
  const first = await get('operators', {trace: trace.id, group: 'name', limit: 0});
  const meta = first.meta;
  const allowed = g => g === 'name' || (g === 'shape' ? meta.has_inputs : meta.has_stacks);
  const group = allowed(state.params.group) ? state.params.group : 'name';
  const select = h('select', {'data-testid': 'operators-group'},
    GROUPS.filter(([g]) => allowed(g)).map(([g, label]) => h('option', {value: g, text: label, selected: g === group})));
  const host = h('div');
  const show = async g => {
    const t = table(trace, g, meta.has_device);
    host.replaceChildren(t);
    await t.ready;
  };
  select.addEventListener('change', () => { setParam('group', select.value); show(select.value); });
  main.append(h('div', {class: 'view', 'data-testid': 'view-operators'},
    section('Operators',
      h('div', {class: 'controls'}, h('label', {}, 'Group by ', select),
        h('span', {class: 'muted', text: 'Totals over the window; user ranges and steps are left out, as in the report. Click an operator for its kernels and stacks.'})),
      host)));
  await show(group);
}

function table(trace, group, hasDevice) {
  const columns = [{key: 'name', label: 'Name'}];
  if (group === 'shape') columns.push({key: 'input_shapes', label: 'Input Shape', sortable: false});
  if (group === 'stack') columns.push({key: 'frame', label: 'Stack (innermost frame)', sortable: false});
  columns.push({key: 'calls', label: 'Calls', num: true});
  if (hasDevice) {
    columns.push({key: 'self_device_us', label: 'Device Self (us)', num: true, fmt: us});
    columns.push({key: 'device_total_us', label: 'Device Total (us)', num: true, fmt: us});
  }
  columns.push({key: 'self_cpu_us', label: 'Host Self (us)', num: true, fmt: us});
  columns.push({key: 'cpu_total_us', label: 'Host Total (us)', num: true, fmt: us});
  if (hasDevice) {
    columns.push({key: 'tc_eligible', label: 'Tensor Cores Eligible', fmt: v => (v ? 'Yes' : 'No'), sortable: false});
    columns.push({key: 'tc_self_share', label: 'Tensor Cores Self (%)', num: true, fmt: v => (v * 100).toFixed(2)});
  }
  return dataTable({testid: 'operators', columns, sortKey: hasDevice ? 'self_device_us' : 'self_cpu_us',
                    remote: q => get('operators', {trace: trace.id, group, ...q}),
                    detail: row => opDetail(trace, row, hasDevice)});
}

async function opDetail(trace, row, hasDevice) {
  const out = h('div', {class: 'op-detail', 'data-testid': 'op-detail'});
  if (hasDevice) {
    const t = dataTable({testid: 'op-kernels', pageSize: 20, sortKey: 'total_us', placeholder: 'Search kernels',
      remote: q => get('kernels', {trace: trace.id, group: 'op', op: row.name, ...q}),
      columns: [
        {key: 'name', label: 'Kernel'}, {key: 'kind', label: 'Kind', sortable: false},
        {key: 'calls', label: 'Calls', num: true},
        {key: 'total_us', label: 'Total (us)', num: true, fmt: us},
        {key: 'mean_us', label: 'Mean (us)', num: true, fmt: us},
        {key: 'achieved_occupancy_pct', label: 'Occupancy %', num: true, fmt: v => fmtNum(v)},
        {key: 'blocks_per_sm', label: 'Blocks/SM', num: true, fmt: v => fmtNum(v)},
        {key: 'tensor_core', label: 'Tensor Cores', fmt: v => (v ? 'Yes' : 'No'), sortable: false}]});
    out.append(h('h3', {text: `Kernels (and copies, memsets) launched by ${row.name}`}), t);
    await t.ready;
  }
  if (row.stack !== undefined) {
    out.append(h('h3', {text: 'Stack'}), await frames(trace, row.stack));
  } else if (row.has_stack) {
    const t = dataTable({testid: 'op-stacks', pageSize: 10, sortKey: 'self_cpu_us', placeholder: 'Search frames',
      remote: q => get('operators', {trace: trace.id, group: 'stack', name: row.name, ...q}),
      columns: [
        {key: 'frame', label: 'Innermost frame', sortable: false},
        {key: 'calls', label: 'Calls', num: true},
        {key: 'self_cpu_us', label: 'Host Self (us)', num: true, fmt: us},
        {key: 'self_device_us', label: 'Device Self (us)', num: true, fmt: us}],
      detail: r => frames(trace, r.stack)});
    out.append(h('h3', {text: `Stacks of ${row.name}`}), t);
    await t.ready;
  }
  return out;
}

async function frames(trace, id) {
  if (id < 0) return h('p', {class: 'muted', text: 'no stack'});
  const s = await get('stack', {trace: trace.id, id});
  // Outermost first, as ptprof records them: the last frame called the op.
  return h('ol', {class: 'frames', 'data-testid': 'frames'}, s.frames.map(f => h('li', {text: f})));
}
