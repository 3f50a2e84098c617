// charts.js: the few charts the views draw, as SVG: stacked bars (a step's breakdown), a
// horizontal share bar, and step lines (memory over time) with drag-to-zoom.
import {h, s, fmtUs} from './dom.js';

// bars: [{label, parts: {category: us}, outlier}], categories in stacking order.
export function stackedBars({bars, categories, colors, testid = 'bars', height = 260, fmt = fmtUs, onBar}) {
  const width = Math.max(360, Math.min(1100, 60 + bars.length * 48));
  const pad = {l: 70, r: 10, t: 10, b: 36};
  const totals = bars.map(b => categories.reduce((a, c) => a + (b.parts[c] || 0), 0));
  const max = Math.max(1e-9, ...totals);
  const plotW = width - pad.l - pad.r, plotH = height - pad.t - pad.b;
  const bw = Math.max(4, Math.min(40, plotW / Math.max(1, bars.length) * 0.7));
  const svg = s('svg', {width, height, viewBox: `0 0 ${width} ${height}`, class: 'chart', 'data-testid': testid});
  for (let i = 0; i <= 4; i++) {
    const y = pad.t + plotH - plotH * i / 4;
    svg.append(s('line', {x1: pad.l, x2: width - pad.r, y1: y, y2: y, class: 'grid'}));
    svg.append(s('text', {x: pad.l - 6, y: y + 4, 'text-anchor': 'end', class: 'axis', text: fmt(max * i / 4)}));
  }
  bars.forEach((b, i) => {
    const x = pad.l + (i + 0.5) * plotW / bars.length - bw / 2;
    let y = pad.t + plotH;
    const g = s('g', {'data-testid': `${testid}-bar`, 'data-label': b.label});
    for (const c of categories) {
      const v = b.parts[c] || 0;
      if (v <= 0) continue;
      const hgt = v / max * plotH;
      y -= hgt;
      g.append(s('rect', {x, y, width: bw, height: Math.max(hgt, 0.5), fill: colors[c] || '#999'},
                 s('title', {text: `${b.label}: ${c} ${fmt(v)}`})));
    }
    if (onBar) { g.classList.add('clickable'); g.addEventListener('click', () => onBar(b)); }
    svg.append(g);
    svg.append(s('text', {x: x + bw / 2, y: height - pad.b + 16, 'text-anchor': 'middle',
                          class: b.outlier ? 'axis outlier' : 'axis', text: b.label}));
  });
  const legend = h('div', {class: 'legend'},
    categories.map(c => h('span', {class: 'key'}, h('i', {class: 'swatch', 'data-color': colors[c]}), c)));
  for (const sw of legend.querySelectorAll('.swatch')) sw.style.background = sw.dataset.color;
  return h('div', {class: 'chart-wrap'}, svg, legend);
}

// One bar split by shares: parts [{label, value, color}].
export function shareBar(parts, testid = 'share') {
  const total = parts.reduce((a, p) => a + p.value, 0) || 1;
  const bar = h('div', {class: 'share-bar', 'data-testid': testid});
  for (const p of parts) {
    if (p.value <= 0) continue;
    const seg = h('span', {title: `${p.label}: ${(p.value / total * 100).toFixed(1)}%`});
    seg.style.width = (p.value / total * 100) + '%';
    seg.style.background = p.color;
    bar.append(seg);
  }
  return bar;
}

// Step lines over x: series [{name, color, xs, ys}] (each y holds from its x to the next);
// onZoom(x0, x1) on a drag across the plot; a double click resets (onZoom(null, null)).
export function stepChart({series, x0, x1, fmtX, fmtY, testid = 'line', width = 900, height = 280, onZoom}) {
  const pad = {l: 80, r: 10, t: 10, b: 30};
  const plotW = width - pad.l - pad.r, plotH = height - pad.t - pad.b;
  let ymax = 1;
  for (const sr of series) for (const y of sr.ys) ymax = Math.max(ymax, y);
  const X = x => pad.l + (x - x0) / Math.max(1e-9, x1 - x0) * plotW;
  const Y = y => pad.t + plotH - y / ymax * plotH;
  const svg = s('svg', {width, height, viewBox: `0 0 ${width} ${height}`, class: 'chart', 'data-testid': testid});
  for (let i = 0; i <= 4; i++) {
    const y = pad.t + plotH * i / 4;
    svg.append(s('line', {x1: pad.l, x2: width - pad.r, y1: y, y2: y, class: 'grid'}));
    svg.append(s('text', {x: pad.l - 6, y: y + 4, 'text-anchor': 'end', class: 'axis', text: fmtY(ymax * (4 - i) / 4)}));
  }
  for (let i = 0; i <= 5; i++) {
    const x = x0 + (x1 - x0) * i / 5;
    // The last label ends at the plot's right edge: centred there, its unit was cut off.
    svg.append(s('text', {x: X(x), y: height - 8, 'text-anchor': i === 5 ? 'end' : 'middle', class: 'axis',
                          text: fmtX(x)}));
  }
  for (const sr of series) {
    let d = '';
    for (let i = 0; i < sr.xs.length; i++) {
      const x = Math.max(pad.l, Math.min(width - pad.r, X(sr.xs[i])));
      const next = i + 1 < sr.xs.length ? Math.min(width - pad.r, X(sr.xs[i + 1])) : width - pad.r;
      d += `${i ? 'L' : 'M'}${x.toFixed(1)},${Y(sr.ys[i]).toFixed(1)}L${next.toFixed(1)},${Y(sr.ys[i]).toFixed(1)}`;
    }
    if (d) svg.append(s('path', {d, fill: 'none', stroke: sr.color, 'stroke-width': 1.5, 'data-series': sr.name}));
  }
  const band = s('rect', {y: pad.t, height: plotH, width: 0, class: 'zoom-band'});
  svg.append(band);
  if (onZoom) {
    let start = null;
    const at = e => {
      const r = svg.getBoundingClientRect();
      return (e.clientX - r.left) * width / r.width;
    };
    svg.addEventListener('mousedown', e => { start = at(e); band.setAttribute('x', start); band.setAttribute('width', 0); });
    svg.addEventListener('mousemove', e => {
      if (start === null) return;
      const x = at(e);
      band.setAttribute('x', Math.min(start, x));
      band.setAttribute('width', Math.abs(x - start));
    });
    svg.addEventListener('mouseup', e => {
      if (start === null) return;
      const a = Math.min(start, at(e)), b = Math.max(start, at(e));
      start = null;
      band.setAttribute('width', 0);
      if (b - a < 4) return;
      const inv = px => x0 + (px - pad.l) / plotW * (x1 - x0);
      onZoom(inv(Math.max(a, pad.l)), inv(Math.min(b, width - pad.r)));
    });
    svg.addEventListener('dblclick', () => onZoom(null, null));
  }
  const legend = h('div', {class: 'legend'},
    series.map(sr => h('span', {class: 'key'}, h('i', {class: 'swatch', 'data-color': sr.color}), sr.name)));
  for (const sw of legend.querySelectorAll('.swatch')) sw.style.background = sw.dataset.color;
  return h('div', {class: 'chart-wrap'}, svg, legend);
}
