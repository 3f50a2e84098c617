// views/flame.js: the stacks (with_stack) as a flame graph: each frame as wide as the time
// spent in it and above it (self host time, or self device time of the kernels the ops
// launched), callers above callees. Click a frame to zoom into it, the bar above to zoom
// out; search marks every frame whose name matches and says how much time they hold.
import {h, s, clear, section, colorOf, fmtUs} from '../dom.js';
import {get} from '../api.js';
import {state, setParam} from '../state.js';

const ROW = 18, WIDTH = 1200;

export async function render(main, trace) {
  const overview = await get('overview', {trace: trace.id});
  const view = h('div', {class: 'view', 'data-testid': 'view-flame'});
  main.append(view);
  if (!overview.has_stacks) {
    view.append(section('Flame graph', h('p', {class: 'muted', 'data-testid': 'no-stacks',
      text: 'This trace has no stacks (record with with_stack).'})));
    return;
  }
  const metric = state.params.metric === 'self_device_time_total' ? 'self_device_time_total' : 'self_cpu_time_total';
  const data = await get('flame', {trace: trace.id, metric});
  const select = h('select', {'data-testid': 'flame-metric'},
    h('option', {value: 'self_cpu_time_total', text: 'Self host time', selected: metric === 'self_cpu_time_total'}),
    h('option', {value: 'self_device_time_total', text: 'Self device time', selected: metric === 'self_device_time_total'}));
  select.addEventListener('change', async () => {
    setParam('metric', select.value);
    const d = await get('flame', {trace: trace.id, metric: select.value});
    graph.setTree(d.tree);
  });
  const search = h('input', {type: 'search', class: 'filter', placeholder: 'Search frames', 'data-testid': 'flame-search'});
  const matched = h('span', {class: 'muted', 'data-testid': 'flame-matched'});
  const path = h('div', {class: 'muted', 'data-testid': 'flame-path'});
  const svgHost = h('div', {class: 'flame-host'});
  view.append(section('Flame graph',
    h('div', {class: 'controls'}, h('label', {}, 'Width ', select), search, matched),
    path, svgHost));
  const graph = new Flame(svgHost, path, matched);
  graph.setTree(data.tree);
  let timer = 0;
  search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => graph.search(search.value), 200);
  });
}

class Flame {
  constructor(host, path, matched) {
    this.host = host;
    this.path = path;
    this.matchedEl = matched;
    this.query = '';
  }
  setTree(tree) {
    this.root = tree;
    this.parents = new Map();
    const walk = n => { for (const c of n.children || []) { this.parents.set(c, n); walk(c); } };
    walk(tree);
    this.focus = tree;
    this.draw();
  }
  search(q) {
    this.query = q.toLowerCase();
    this.draw();
  }
  matches(n) { return this.query && n.name.toLowerCase().includes(this.query); }
  draw() {
    const focus = this.focus;
    const ancestors = [];
    for (let n = this.parents.get(focus); n; n = this.parents.get(n)) ancestors.unshift(n);
    const rows = [];
    let depthMax = 0;
    const place = (n, depth, x, w) => {
      if (w < 0.5) return;
      rows.push({n, depth, x, w});
      depthMax = Math.max(depthMax, depth);
      let cx = x;
      for (const c of n.children || []) {
        const cw = n.value > 0 ? w * c.value / n.value : 0;
        place(c, depth + 1, cx, cw);
        cx += cw;
      }
    };
    ancestors.forEach((a, i) => rows.push({n: a, depth: i, x: 0, w: WIDTH, ancestor: true}));
    place(focus, ancestors.length, 0, WIDTH);
    const height = (Math.max(depthMax, ancestors.length) + 1) * ROW + 4;
    const svg = s('svg', {width: WIDTH, height, viewBox: `0 0 ${WIDTH} ${height}`, class: 'flame', 'data-testid': 'flame-svg'});
    const total = this.root.value || 1;
    for (const r of rows) {
      const hit = this.matches(r.n);
      const g = s('g', {class: 'frame', 'data-testid': 'flame-frame', 'data-name': r.n.name});
      g.append(s('rect', {x: r.x, y: r.depth * ROW, width: Math.max(r.w - 0.5, 0.5), height: ROW - 1,
                          fill: hit ? '#e15759' : r.ancestor ? '#d5dbe2' : colorOf(r.n.name)},
                 s('title', {text: `${r.n.name}\n${fmtUs(r.n.value)} (${(r.n.value / total * 100).toFixed(2)}% of all)`})));
      if (r.w > 40) {
        const label = r.n.name.length * 6.2 > r.w - 6 ? r.n.name.slice(0, Math.max(0, Math.floor((r.w - 6) / 6.2) - 1)) + '…' : r.n.name;
        g.append(s('text', {x: r.x + 3, y: r.depth * ROW + ROW / 2 + 4, class: 'flame-label', text: label}));
      }
      g.addEventListener('click', () => { this.focus = r.n; this.draw(); });
      svg.append(g);
    }
    clear(this.host).append(svg);
    this.path.textContent = [...ancestors, focus].map(n => n.name).join(' › ') + `: ${fmtUs(focus.value)}`;
    if (this.query) {
      // Time under matching frames, each moment once (a match inside a match is not added).
      let sum = 0;
      const walk = n => { if (this.matches(n)) { sum += n.value; return; } for (const c of n.children || []) walk(c); };
      walk(this.root);
      this.matchedEl.textContent = `matched: ${fmtUs(sum)} (${(sum / total * 100).toFixed(2)}%)`;
    } else {
      this.matchedEl.textContent = '';
    }
  }
}
