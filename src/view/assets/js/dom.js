// dom.js: building elements and formatting numbers. Everything the page shows goes through
// text nodes (never innerHTML), so a name from a trace is always shown as text.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

const SVG_NS = 'http://www.w3.org/2000/svg';
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c) el.append(c);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// Times: microseconds in, the unit chosen by size (as the report's tables print them).
export function fmtUs(us) {
  if (us === null || us === undefined || Number.isNaN(us)) return '—';
  const a = Math.abs(us);
  if (a >= 1e6) return (us / 1e6).toFixed(3) + ' s';
  if (a >= 1e3) return (us / 1e3).toFixed(3) + ' ms';
  return us.toFixed(3) + ' us';
}
export function fmtNs(ns) {
  return fmtUs(ns / 1000);
}
export function fmtPct(share, digits = 1) {
  if (share === null || share === undefined || Number.isNaN(share)) return '—';
  return (share * 100).toFixed(digits) + '%';
}
export function fmtBytes(b) {
  if (b === null || b === undefined) return '—';
  const a = Math.abs(b);
  if (a >= 1024 ** 3) return (b / 1024 ** 3).toFixed(2) + ' GiB';
  if (a >= 1024 ** 2) return (b / 1024 ** 2).toFixed(2) + ' MiB';
  if (a >= 1024) return (b / 1024).toFixed(2) + ' KiB';
  return b + ' B';
}
export function fmtNum(v, digits = 2) {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  return Number.isInteger(v) ? String(v) : v.toFixed(digits);
}

// A stable colour per name (the same op has the same colour in every view).
export function colorOf(name) {
  let hash = 2166136261;
  for (let i = 0; i < name.length; i++) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 16777619);
  }
  const hue = (hash >>> 0) % 360;
  return `hsl(${hue}, 55%, 62%)`;
}

// TensorBoard's step-time category colours, in its priority order.
export const CATEGORY_COLORS = {
  'Kernel': '#4e79a7',
  'Memcpy': '#f28e2b',
  'Memset': '#e15759',
  'Communication': '#76b7b2',
  'Runtime': '#59a14f',
  'DataLoader': '#edc948',
  'CPU Exec': '#b07aa1',
  'Other': '#bab0ac',
};

export function section(title, ...content) {
  return h('section', {class: 'card'}, h('h2', {text: title}), ...content);
}

// A panel saying what went wrong and with which file.
export function errorPanel(message, file) {
  return h('div', {class: 'error-panel', 'data-testid': 'error-panel', role: 'alert'},
    h('strong', {text: 'Cannot show this'}),
    file ? h('div', {class: 'error-file', text: file}) : null,
    h('pre', {text: message}));
}
