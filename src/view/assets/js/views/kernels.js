// views/kernels.js: TensorBoard's GPU Kernel view: kernels by name (the report's rows) or by
// operator and launch properties (grid, block, registers, shared memory), with Tensor Core
// use (TB's name list, and the sm90+ names ptprof adds), blocks per SM and occupancy.
import {h, section, fmtPct, fmtNum} from '../dom.js';
import {dataTable} from '../table.js';
import {shareBar} from '../charts.js';
import {get} from '../api.js';
import {state, setParam} from '../state.js';

export async function render(main, trace) {
  const first = await get('kernels', {trace: trace.id, group: 'name', limit: 0});
  const m = first.meta;
  const view = h('div', {class: 'view', 'data-testid': 'view-kernels'});
  main.append(view);
  if (!m.kernels) {
    view.append(section('GPU Kernels', h('p', {class: 'muted', 'data-testid': 'no-kernels', text: 'This trace has no GPU kernels.'})));
    return;
  }
  const total = m.total_us || 0;
  view.append(section('Tensor Cores',
    h('p', {'data-testid': 'tc-share'}, `Kernel time in Tensor Core kernels: ${fmtPct(total ? m.tensor_core_us / total : 0)} by TensorBoard's list, `,
      `${fmtPct(total ? m.tensor_core_sm90_us / total : 0)} adding the sm90+ names (wgmma, nvjet, ...) its list predates.`),
    shareBar([{label: 'Tensor Cores (sm90+ names too)', value: m.tensor_core_sm90_us, color: '#59a14f'},
              {label: 'other kernels', value: total - m.tensor_core_sm90_us, color: '#bab0ac'}], 'tc-bar')));
  const group = state.params.group === 'op' ? 'op' : 'name';
  const select = h('select', {'data-testid': 'kernels-group'},
    h('option', {value: 'name', text: 'Kernel Name', selected: group === 'name'}),
    h('option', {value: 'op', text: 'Kernel Properties + Op Name', selected: group === 'op'}));
  const host = h('div');
  const show = async g => {
    const t = table(trace, g);
    host.replaceChildren(t);
    await t.ready;
  };
  select.addEventListener('change', () => { setParam('group', select.value); show(select.value); });
  view.append(section('Kernels', h('div', {class: 'controls'}, h('label', {}, 'Group by ', select)), host));
  await show(group);
}

function table(trace, group) {
  const columns = [{key: 'name', label: 'Name'}];
  if (group === 'op') {
    columns.push({key: 'op', label: 'Operator'});
    columns.push({key: 'grid', label: 'Grid', value: r => r.grid.join(', '), sortable: false});
    columns.push({key: 'block', label: 'Block', value: r => r.block.join(', '), sortable: false});
    columns.push({key: 'registers_per_thread', label: 'Registers Per Thread', num: true, sortable: false});
    columns.push({key: 'shared_memory', label: 'Shared Memory', num: true, sortable: false});
  }
  columns.push(
    {key: 'tensor_core', label: 'Tensor Cores Used', sortable: false, fmt: (v, r) => (v ? 'Yes' : r.tensor_core_sm90 ? 'Yes (sm90+ name)' : 'No')},
    {key: 'calls', label: 'Calls', num: true},
    {key: 'total_us', label: 'Total Duration (us)', num: true, fmt: v => v.toFixed(3)},
    {key: 'mean_us', label: 'Mean Duration (us)', num: true, fmt: v => v.toFixed(3)},
    {key: 'max_us', label: 'Max Duration (us)', num: true, fmt: v => v.toFixed(3)},
    {key: 'min_us', label: 'Min Duration (us)', num: true, fmt: v => v.toFixed(3)},
    {key: 'blocks_per_sm', label: 'Mean Blocks Per SM', num: true, fmt: v => fmtNum(v)},
    {key: 'achieved_occupancy_pct', label: 'Mean Est. Achieved Occupancy (%)', num: true, fmt: v => fmtNum(v)});
  return dataTable({testid: 'kernels', columns, sortKey: 'total_us', placeholder: 'Search by kernel or op name',
                    remote: q => get('kernels', {trace: trace.id, group, ...(group === 'op' ? {kind: 'kernel'} : {}), ...q})});
}
