// timeline.js: the Trace view's canvas: every host thread and GPU stream as a track of lanes
// (one per depth), the memory counters, launch flows and autograd's forward/backward links, a
// time axis; zoom (ctrl+wheel, W/S, buttons), pan (drag, A/D, horizontal wheel), select
// (click), measure (shift+drag).
//
// The page never holds the trace: it asks the server for the window on screen (and half of it
// either side) at the screen's resolution (/api/timeline/slices: at most 2 slices per pixel
// per lane, the longest of those it stands for), draws what it has at once, scaled, and asks
// again when the window moves out of what it has or the zoom changes its level.
import {get} from './api.js';
import {colorOf, fmtNs, fmtBytes} from './dom.js';

const AXIS_H = 24, LABEL_W = 210, HEADER_H = 18, LANE_H = 16, COUNTER_H = 44;

export class Timeline {
  constructor({canvas, host, traceId, meta, onSelect, onWindow}) {
    this.canvas = canvas;
    this.host = host;     // the element whose width the canvas takes
    this.top = 0;         // vertical scroll, px
    this.traceId = traceId;
    this.meta = meta;
    this.onSelect = onSelect;
    this.onWindow = onWindow;
    this.t0 = 0;
    this.t1 = Math.max(1, meta.end_ns);
    this.collapsed = new Set();
    this.data = null;        // the last slices answer, lanes keyed "track:depth"
    this.counters = null;
    this.flows = null;
    this.names = new Map();
    this.selected = null;    // {id, track, depth, start, dur, flow: {...}}
    this.measure = null;     // [a, b] ns
    this.pending = null;
    this.inflight = 0;
    this.layout();
    this.bind();
    this.resize();
  }

  // ---- layout: rows of tracks, in the order the server gives them, counters last ----
  layout() {
    const rows = [];
    let y = 0;
    let group = null;
    for (const t of this.meta.tracks) {
      if (t.group !== group) {
        group = t.group;
        rows.push({kind: 'group', label: group, y, h: HEADER_H});
        y += HEADER_H;
      }
      rows.push({kind: 'track', track: t, label: t.name, y, h: HEADER_H});
      y += HEADER_H;
      if (!this.collapsed.has(t.id))
        for (let d = 0; d < t.lanes; d++) {
          rows.push({kind: 'lane', track: t, depth: d, y, h: LANE_H});
          y += LANE_H;
        }
    }
    for (const c of this.meta.counters) {
      rows.push({kind: 'counter', counter: c, label: c.name, y, h: COUNTER_H});
      y += COUNTER_H;
    }
    this.rows = rows;
    this.height = y;
    this.top = Math.max(0, Math.min(this.top, this.height - 40));
  }

  resize() {
    const dpr = window.devicePixelRatio || 1;
    const w = this.host.clientWidth;
    const hgt = Math.max(200, Math.min(700, this.height + AXIS_H + 8));
    this.cssW = w;
    this.cssH = hgt;
    this.canvas.width = Math.max(1, Math.floor(w * dpr));
    this.canvas.height = Math.max(1, Math.floor(hgt * dpr));
    this.canvas.style.width = w + 'px';
    this.canvas.style.height = hgt + 'px';
    this.ctx = this.canvas.getContext('2d');
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    this.draw();
    this.fetch();
  }

  plotW() { return Math.max(1, this.cssW - LABEL_W); }
  x(t) { return LABEL_W + (t - this.t0) / (this.t1 - this.t0) * this.plotW(); }
  tAt(px) { return this.t0 + (px - LABEL_W) / this.plotW() * (this.t1 - this.t0); }

  // ---- the window ----
  setWindow(t0, t1) {
    const minSpan = 100;  // ns
    if (t1 - t0 < minSpan) { const m = (t0 + t1) / 2; t0 = m - minSpan / 2; t1 = m + minSpan / 2; }
    const pad = (this.meta.end_ns || 1) * 0.05;
    const lo = -pad, hi = this.meta.end_ns + pad;
    if (t1 - t0 > hi - lo) { t0 = lo; t1 = hi; }
    if (t0 < lo) { t1 += lo - t0; t0 = lo; }
    if (t1 > hi) { t0 -= t1 - hi; t1 = hi; }
    this.t0 = t0;
    this.t1 = t1;
    this.draw();
    this.schedule();
    if (this.onWindow) this.onWindow(t0, t1);
  }
  zoom(factor, atPx) {
    const at = this.tAt(atPx === undefined ? LABEL_W + this.plotW() / 2 : atPx);
    this.setWindow(at - (at - this.t0) * factor, at + (this.t1 - at) * factor);
  }
  pan(fraction) {
    const d = (this.t1 - this.t0) * fraction;
    this.setWindow(this.t0 + d, this.t1 + d);
  }
  reset() {
    this.top = 0;
    this.setWindow(0, Math.max(1, this.meta.end_ns));
  }
  // Shows [start, start + dur] with a margin, and scrolls its row into view.
  focus(start, dur, track, depth) {
    const span = Math.max(dur, 1000);
    this.setWindow(start - span * 0.25, start + span * 1.25);
    const row = this.rows.find(r => r.kind === 'lane' && r.track.id === track && r.depth === depth);
    if (row) this.top = Math.max(0, row.y - 60);
    this.draw();
    this.schedule();
  }

  // ---- data ----
  schedule() {
    clearTimeout(this.pending);
    this.pending = setTimeout(() => this.fetch(), 40);
  }
  // The lanes of the rows from a screen above the view to a screen below it, as ranges of lane
  // indexes ("3-40,52-60"), and the rows' pixel span.
  wantedLanes() {
    const lo = this.top - this.cssH, hi = this.top + 2 * this.cssH;
    const ids = [];
    for (const r of this.rows)
      if (r.kind === 'lane' && r.y + r.h >= lo && r.y <= hi) ids.push(r.track.first_lane + r.depth);
    ids.sort((a, b) => a - b);
    const ranges = [];
    for (const id of ids) {
      const last = ranges[ranges.length - 1];
      if (last && id === last[1] + 1) last[1] = id; else ranges.push([id, id]);
    }
    return {lanes: ranges.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(','), lo, hi};
  }
  covers() {
    const d = this.data;
    if (!d) return false;
    if (this.top < d.rowsLo || this.top + this.cssH > d.rowsHi) return false;
    const want = (this.t1 - this.t0) / this.plotW();
    // Inside what was fetched, and at a level no coarser than asked (nor 4x finer).
    return d.t0 <= this.t0 && d.t1 >= this.t1 && d.bucket_ns <= Math.max(1, want) * 1.01 &&
           d.bucket_ns * 4 >= Math.floor(want);
  }
  async fetch() {
    if (this.covers()) return;
    const span = this.t1 - this.t0;
    const t0 = Math.floor(this.t0 - span / 2), t1 = Math.ceil(this.t1 + span / 2);
    // One bucket per pixel of the window asked for (twice the view): the server keeps at
    // most two slices per bucket width (here one per pixel seen), the longest of each.
    const px = Math.round(this.plotW());
    const my = ++this.inflight;
    const params = {trace: this.traceId, t0, t1, px};
    const wanted = this.wantedLanes();
    const [slices, counters] = await Promise.all([
      wanted.lanes ? get('timeline/slices', {...params, lanes: wanted.lanes}) : Promise.resolve({t0, t1, bucket_ns: 1, lanes: [], names: {}}),
      this.meta.counters.length ? get('timeline/counters', params) : Promise.resolve(null)]);
    let flows = null;
    // Every flow in view only once few are (else only the selected slice's).
    if ((this.meta.flows || this.meta.fwdbwd_flows) && span < 2e6) flows = await get('timeline/flows', {trace: this.traceId, t0, t1, limit: 400});
    if (my !== this.inflight) return;  // a newer window asked meanwhile
    const lanes = new Map();
    for (const l of slices.lanes) {
      // Ids and starts come as differences (timeline.h): back to values.
      let id = l.first, start = slices.t0;
      for (let i = 0; i < l.id.length; i++) {
        id += l.id[i];
        l.id[i] = id;
        start += l.start[i];
        l.start[i] = start;
      }
      lanes.set(l.track + ':' + l.depth, l);
    }
    for (const [k, v] of Object.entries(slices.names)) this.names.set(Number(k), v);
    this.data = {t0: slices.t0, t1: slices.t1, bucket_ns: slices.bucket_ns, lanes,
                 rowsLo: wanted.lo, rowsHi: wanted.hi};
    this.counters = counters;
    this.flows = flows && !flows.too_many ? flows.flows : null;
    this.draw();
    if (this.onData) this.onData();
  }

  // ---- drawing ----
  draw() {
    const c = this.ctx;
    if (!c) return;
    const W = this.cssW, H = this.cssH;
    const top = this.top;
    c.clearRect(0, 0, W, H);
    c.font = '11px system-ui, sans-serif';
    c.textBaseline = 'middle';
    const scale = this.plotW() / (this.t1 - this.t0);
    const lanes = this.data ? this.data.lanes : new Map();
    for (const row of this.rows) {
      const y = AXIS_H + row.y - top;
      if (y + row.h < AXIS_H || y > H) continue;
      if (row.kind === 'group') {
        c.fillStyle = '#e8eef5';
        c.fillRect(0, y, W, row.h);
        c.fillStyle = '#1f4e79';
        c.fillText(row.label, 6, y + row.h / 2);
        continue;
      }
      if (row.kind === 'track') {
        c.fillStyle = '#f6f8fa';
        c.fillRect(0, y, W, row.h);
        c.fillStyle = '#1d2733';
        const mark = this.collapsed.has(row.track.id) ? '▸ ' : '▾ ';
        c.fillText(this.fit(mark + row.label, LABEL_W - 10), 6, y + row.h / 2);
        continue;
      }
      if (row.kind === 'counter') { this.drawCounter(row, y); continue; }
      const lane = lanes.get(row.track.id + ':' + row.depth);
      if (!lane) continue;
      c.save();
      c.beginPath();
      c.rect(LABEL_W, y, W - LABEL_W, row.h);
      c.clip();
      const n = lane.id.length;
      for (let i = 0; i < n; i++) {
        const x0 = LABEL_W + (lane.start[i] - this.t0) * scale;
        const w = Math.max(1, lane.dur[i] * scale);
        if (x0 > W || x0 + w < LABEL_W) continue;
        const name = this.names.get(lane.name[i]) || '';
        c.fillStyle = colorOf(name);
        c.fillRect(x0, y + 1, w, row.h - 2);
        if (lane.n[i] > 1 && w >= 3) {  // stands for several: a darker edge
          c.fillStyle = 'rgba(0,0,0,0.18)';
          c.fillRect(x0, y + row.h - 4, w, 3);
        }
        if (w > 30) {
          const lx = Math.max(x0, LABEL_W) + 3;
          const label = this.fit(name, Math.min(x0 + w, W) - lx - 3);
          if (label) {
            c.fillStyle = '#111';
            c.fillText(label, lx, y + row.h / 2);
          }
        }
        if (this.selected && lane.id[i] === this.selected.id) {
          c.strokeStyle = '#000';
          c.lineWidth = 2;
          c.strokeRect(x0, y + 1, w, row.h - 2);
        }
      }
      c.restore();
    }
    this.drawFlows(top);
    this.drawMeasure();
    this.drawAxis();
  }

  // The name cut to `width` px with an ellipsis ("" when not even a few letters fit).
  fit(name, width) {
    if (width < 12) return '';
    if (!this.widths) this.widths = new Map();
    let full = this.widths.get(name);
    if (full === undefined) {
      full = this.ctx.measureText(name).width;
      this.widths.set(name, full);
    }
    if (full <= width) return name;
    const keep = Math.floor(name.length * width / full) - 1;
    return keep >= 2 ? name.slice(0, keep) + '…' : '';
  }

  rowY(track, depth, top) {
    const row = this.rows.find(r => r.kind === 'lane' && r.track.id === track && r.depth === depth);
    return row ? AXIS_H + row.y - top + row.h / 2 : null;
  }

  drawFlows(top) {
    const c = this.ctx;
    const arrows = [];
    if (this.flows) for (const f of this.flows) arrows.push(f);
    const s = this.selected;
    if (s && s.flow) {
      const launchFirst = s.flow.start_ns >= s.start;
      arrows.push(launchFirst ? [s.id, s.flow.id, s.start, s.flow.start_ns, s.track, s.depth, s.flow.track, s.flow.depth]
                              : [s.flow.id, s.id, s.flow.start_ns, s.start, s.flow.track, s.flow.depth, s.track, s.depth]);
    }
    c.save();
    c.beginPath();
    c.rect(LABEL_W, AXIS_H, this.cssW - LABEL_W, this.cssH - AXIS_H);
    c.clip();
    for (const [from, to, ts0, ts1, tr0, d0, tr1, d1, kind] of arrows) {
      const y0 = this.rowY(tr0, d0, top), y1 = this.rowY(tr1, d1, top);
      if (y0 === null || y1 === null) continue;
      const x0 = this.x(ts0), x1 = this.x(ts1);
      const hot = s && (from === s.id || to === s.id);
      // Launch flows grey, autograd's forward/backward links blue.
      c.strokeStyle = hot ? '#c0392b' : kind === 1 ? 'rgba(41,128,185,0.6)' : 'rgba(80,80,80,0.45)';
      c.lineWidth = hot ? 2 : 1;
      c.beginPath();
      c.moveTo(x0, y0);
      c.bezierCurveTo(x0, (y0 + y1) / 2, x1, (y0 + y1) / 2, x1, y1);
      c.stroke();
      c.fillStyle = c.strokeStyle;
      c.beginPath();
      c.arc(x1, y1, hot ? 3 : 2, 0, Math.PI * 2);
      c.fill();
    }
    c.restore();
  }

  drawCounter(row, y) {
    const c = this.ctx;
    c.fillStyle = '#1d2733';
    c.fillText(this.fit(row.label, LABEL_W - 80), 6, y + row.h / 2);
    const k = this.counters && this.counters.counters.find(k => k.id === row.counter.id);
    if (!k) return;
    const peak = Math.max(1, row.counter.peak_allocated);
    const Y = v => y + row.h - 2 - v / peak * (row.h - 6);
    c.save();
    c.beginPath();
    c.rect(LABEL_W, y, this.cssW - LABEL_W, row.h);
    c.clip();
    c.fillStyle = 'rgba(78,121,167,0.25)';
    c.strokeStyle = '#4e79a7';
    c.beginPath();
    let last = k.before_allocated;
    c.moveTo(LABEL_W, Y(last));
    for (let i = 0; i < k.t.length; i++) {
      const x = this.x(k.t[i]);
      c.lineTo(x, Y(last));
      c.lineTo(x, Y(k.max[i]));
      c.lineTo(x, Y(k.min[i]));
      last = k.last[i];
      c.lineTo(x, Y(last));
    }
    c.lineTo(this.cssW, Y(last));
    c.stroke();
    c.restore();
    c.fillStyle = '#6b7785';
    c.fillText(fmtBytes(peak), LABEL_W - 70, y + 8, 64);
  }

  drawMeasure() {
    if (!this.measure) return;
    const c = this.ctx;
    const [a, b] = this.measure;
    const x0 = this.x(Math.min(a, b)), x1 = this.x(Math.max(a, b));
    c.fillStyle = 'rgba(31,78,121,0.12)';
    c.fillRect(x0, AXIS_H, x1 - x0, this.cssH - AXIS_H);
    c.fillStyle = '#1f4e79';
    c.fillText(fmtNs(Math.abs(b - a)), Math.min(x0, x1) + 4, AXIS_H + 10);
  }

  drawAxis() {
    const c = this.ctx;
    c.fillStyle = '#fff';
    c.fillRect(0, 0, this.cssW, AXIS_H);
    c.strokeStyle = '#dde3ea';
    c.beginPath();
    c.moveTo(0, AXIS_H - 0.5);
    c.lineTo(this.cssW, AXIS_H - 0.5);
    c.stroke();
    const span = this.t1 - this.t0;
    const target = span / Math.max(1, this.plotW() / 110);
    const step = Math.pow(10, Math.ceil(Math.log10(target)));
    const nice = [step / 5, step / 2, step].find(s => s >= target) || step;
    c.fillStyle = '#6b7785';
    for (let t = Math.ceil(this.t0 / nice) * nice; t <= this.t1; t += nice) {
      const x = this.x(t);
      c.fillRect(x, AXIS_H - 6, 1, 6);
      c.fillText(fmtNs(t), x + 3, AXIS_H / 2);
    }
    c.fillStyle = '#1d2733';
    c.fillText('time since trace start', 6, AXIS_H / 2);
  }

  // ---- hit testing ----
  hit(px, py) {
    const top = this.top;
    const y = py - AXIS_H + top;
    const row = this.rows.find(r => y >= r.y && y < r.y + r.h);
    if (!row) return null;
    if (row.kind === 'track') return {toggle: row.track.id};
    if (row.kind !== 'lane' || !this.data || px < LABEL_W) return null;
    const lane = this.data.lanes.get(row.track.id + ':' + row.depth);
    if (!lane) return null;
    const scale = this.plotW() / (this.t1 - this.t0);
    let best = -1;
    for (let i = 0; i < lane.id.length; i++) {
      const x0 = LABEL_W + (lane.start[i] - this.t0) * scale;
      const w = Math.max(1, lane.dur[i] * scale);
      if (px >= x0 - 1 && px <= x0 + w + 1) { best = i; if (px >= x0 && px <= x0 + w) break; }
    }
    if (best < 0) return null;
    return {id: lane.id[best], track: row.track.id, depth: row.depth, start: lane.start[best], dur: lane.dur[best]};
  }

  async select(ref) {
    if (!ref) { this.selected = null; this.draw(); if (this.onSelect) this.onSelect(null); return; }
    const ev = await get('timeline/event', {trace: this.traceId, id: ref.id});
    this.selected = {id: ev.id, track: ev.track, depth: ev.depth, start: ev.start_ns, dur: ev.dur_ns, flow: ev.flow};
    this.draw();
    if (this.onSelect) this.onSelect(ev);
  }

  // ---- input ----
  bind() {
    const cv = this.canvas;
    let down = null;
    cv.addEventListener('mousedown', e => {
      const r = cv.getBoundingClientRect();
      down = {x: e.clientX - r.left, y: e.clientY - r.top, t0: this.t0, t1: this.t1, moved: false, shift: e.shiftKey};
      if (e.shiftKey) this.measure = [this.tAt(down.x), this.tAt(down.x)];
    });
    this.onMove = e => {
      if (!down) return;
      const r = cv.getBoundingClientRect();
      const x = e.clientX - r.left;
      if (Math.abs(x - down.x) > 3) down.moved = true;
      if (down.shift) {
        this.measure[1] = this.tAt(x);
        this.draw();
        return;
      }
      if (!down.moved) return;
      const dt = (x - down.x) / this.plotW() * (down.t1 - down.t0);
      this.setWindow(down.t0 - dt, down.t1 - dt);
    };
    this.onUp = e => {
      if (!down) return;
      const d = down;
      down = null;
      if (d.moved) return;
      if (d.shift) { this.measure = null; this.draw(); }
      const target = this.hit(d.x, d.y);
      if (target && target.toggle !== undefined) {
        if (this.collapsed.has(target.toggle)) this.collapsed.delete(target.toggle);
        else this.collapsed.add(target.toggle);
        this.layout();
        this.data = null;  // other rows: other lanes
        this.resize();
        return;
      }
      this.select(target).catch(() => {});
    };
    window.addEventListener('mousemove', this.onMove);
    window.addEventListener('mouseup', this.onUp);
    cv.addEventListener('wheel', e => {
      if (e.ctrlKey || e.metaKey) {
        e.preventDefault();
        const r = cv.getBoundingClientRect();
        this.zoom(Math.pow(1.0015, e.deltaY), e.clientX - r.left);
      } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        e.preventDefault();
        this.pan((e.deltaX || e.deltaY) / this.plotW());
      } else {
        // Vertical: the rows scroll inside the canvas; at either end the page scrolls.
        const next = Math.max(0, Math.min(this.top + e.deltaY, Math.max(0, this.height + AXIS_H - this.cssH)));
        if (next === this.top) return;
        e.preventDefault();
        this.top = next;
        this.draw();
        this.schedule();
      }
    }, {passive: false});
    this.keys = e => {
      if (e.target && (e.target.tagName === 'INPUT' || e.target.tagName === 'SELECT')) return;
      const k = e.key.toLowerCase();
      if (k === 'w') this.zoom(0.8);
      else if (k === 's') this.zoom(1.25);
      else if (k === 'a') this.pan(-0.2);
      else if (k === 'd') this.pan(0.2);
    };
    window.addEventListener('keydown', this.keys);
    this.onResize = () => this.resize();
    window.addEventListener('resize', this.onResize);
  }

  destroy() {
    window.removeEventListener('mousemove', this.onMove);
    window.removeEventListener('mouseup', this.onUp);
    window.removeEventListener('keydown', this.keys);
    window.removeEventListener('resize', this.onResize);
  }
}
