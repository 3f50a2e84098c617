// table.js: a sortable, filterable table (click a header to sort, again to reverse; type to
// filter), showing rows a page at a time, with rows that open to show more. Its rows are
// either given (`rows`) or asked of the server a page at a time (`remote(query)` answering
// {total, rows} for {sort, order, q, offset, limit}: the row tables of /api).
import {h, clear} from './dom.js';

// columns: [{key, label, fmt(v, row), num, title, value(row)}].
export function dataTable(opts) {
  const {columns, testid = 'table', filterKeys = ['name'], pageSize = 100, detail, remote} = opts;
  const rows = opts.rows || [];
  const searchable = opts.filter !== undefined ? opts.filter : remote || rows.length > 10;
  let sortKey = opts.sortKey || null;
  let desc = opts.desc !== undefined ? opts.desc : true;
  let filter = '';
  let shown = pageSize;
  let generation = 0;
  const root = h('div', {class: 'table-wrap', 'data-testid': testid});
  const input = h('input', {type: 'search', placeholder: opts.placeholder || 'Search by name', class: 'filter',
                            'data-testid': testid + '-filter'});
  let timer = 0;
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => { filter = input.value; shown = pageSize; render(); }, remote ? 300 : 150);
  });
  const count = h('span', {class: 'muted count', 'data-testid': testid + '-count'});
  const table = h('table', {class: 'data'});
  const more = h('button', {class: 'more', text: 'Show more', 'data-testid': testid + '-more'});
  more.addEventListener('click', () => { shown += pageSize; render(); });
  root.append(h('div', {class: 'table-tools'}, searchable ? input : null, count), table, more);

  function value(row, c) { return c.value ? c.value(row) : row[c.key]; }
  function local() {
    let out = rows;
    const f = filter.toLowerCase();
    if (f) out = out.filter(r => filterKeys.some(k => String(r[k] ?? '').toLowerCase().includes(f)));
    if (sortKey) {
      const c = columns.find(c => c.key === sortKey);
      out = [...out].sort((a, b) => {
        const x = value(a, c), y = value(b, c);
        let d;
        if (typeof x === 'number' || typeof y === 'number') d = (x ?? -Infinity) - (y ?? -Infinity);
        else d = String(x ?? '').localeCompare(String(y ?? ''));
        return desc ? -d : d;
      });
    }
    return {total: out.length, rows: out.slice(0, shown)};
  }
  async function render() {
    const my = ++generation;
    root.dataset.busy = '1';  // while a page is on its way (tests wait for it)
    const page = remote
      ? await remote({sort: sortKey || undefined, order: desc ? 'desc' : 'asc', q: filter || undefined, offset: 0, limit: shown})
      : local();
    if (my !== generation) return;
    clear(table);
    const head = h('tr');
    for (const c of columns) {
      const arrow = c.key === sortKey ? (desc ? ' ▼' : ' ▲') : '';
      const sortable = !remote || c.sortable !== false;
      const th = h('th', {class: (c.num ? 'num ' : '') + (sortable ? 'sortable' : ''), title: c.title,
                          'data-testid': `${testid}-col-${c.key}`}, c.label + arrow);
      if (sortable)
        th.addEventListener('click', () => {
          if (sortKey === c.key) desc = !desc; else { sortKey = c.key; desc = !!c.num; }
          render();
        });
      head.append(th);
    }
    table.append(h('thead', {}, head));
    const body = h('tbody');
    page.rows.forEach((row, i) => {
      const tr = h('tr', {'data-testid': `${testid}-row`, 'data-index': i, class: detail ? 'openable' : ''});
      for (const c of columns) {
        const v = value(row, c);
        const text = c.fmt ? c.fmt(v, row) : (v ?? '');
        tr.append(h('td', {class: c.num ? 'num' : c.cls || '', title: c.num ? undefined : String(v ?? '')},
                       text instanceof Node ? text : String(text)));
      }
      body.append(tr);
      if (detail) {
        tr.addEventListener('click', () => {
          const next = tr.nextSibling;
          if (next && next.classList && next.classList.contains('detail-row')) { next.remove(); return; }
          const cell = h('td', {colspan: columns.length});
          tr.after(h('tr', {class: 'detail-row', 'data-testid': `${testid}-detail`}, cell));
          Promise.resolve(detail(row)).then(el => cell.append(el)).catch(e => cell.append(String(e.message || e)));
        });
      }
    });
    table.append(body);
    const all = remote ? page.total : rows.length;
    count.textContent = `${Math.min(page.rows.length, page.total)} of ${page.total}` +
                        (filter && !remote ? ` (${all} in all)` : '') + ' rows';
    more.hidden = page.rows.length >= page.total;
    if (opts.onPage) opts.onPage(page);
    root.dataset.busy = '0';
  }
  root.ready = render();
  return root;
}
