// weir console: the REST API of `weir serve` (docs/operations/rest.md) in a
// page, polled once a second; plain JS, no library, no CDN: every file is
// compiled into the binary.
"use strict";
const params = new URLSearchParams(location.search);
const token = params.get("access_token");
const $ = id => document.getElementById(id);

// ---------------------------------------------------------------- HTTP

function withToken(path) {
  return token ? path + (path.includes("?") ? "&" : "?") + "access_token=" + encodeURIComponent(token) : path;
}

/// GET `path` as JSON; throws on a non-2xx answer.
function api(path) {
  return fetch(withToken(path)).then(r => { if (!r.ok) throw new Error(path + ": " + r.status); return r.json(); });
}

/// `method` `path` with `body` (a string or an object sent as JSON):
/// {status, json} whatever the status (json null when the answer is not JSON).
async function call(method, path, body) {
  const init = { method };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    init.headers = { "Content-Type": typeof body === "string" ? "application/toml" : "application/json" };
  }
  const r = await fetch(withToken(path), init);
  let json = null;
  try { json = await r.json(); } catch (e) { /* not JSON */ }
  return { status: r.status, json };
}

function errorText(res) {
  return res.json && res.json.errors ? res.json.errors.join("; ") : "HTTP " + res.status;
}

// ---------------------------------------------------------------- DOM and formats

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}
const SVG = "http://www.w3.org/2000/svg";
function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

function fmtRate(x) { x = Number(x) || 0; return x >= 1000 ? (x / 1000).toFixed(1) + "k" : x.toFixed(x < 10 ? 1 : 0); }
function fmtInt(x) { return Number(x || 0).toLocaleString("en-US"); }
function fmtBytes(b) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0; b = Number(b) || 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return b.toFixed(i ? 1 : 0) + " " + u[i];
}
function fmtTime(ms) { return ms === null || ms === undefined || ms < 0 ? "-" : new Date(ms).toISOString().replace(".000Z", "Z"); }
function isSetWatermark(ms) { return ms !== null && ms !== undefined && Math.abs(ms) < 9e18; }
function fmtWatermark(ms) {
  if (ms === null || ms === undefined || ms <= -9e18) return "-";
  if (ms >= 9e18) return "+inf";
  return fmtTime(ms);
}
function fmtDuration(ms) {
  if (ms === null || ms === undefined) return "-";
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 120000) return (ms / 1000).toFixed(1) + " s";
  const s = Math.round(ms / 1000);
  return Math.floor(s / 3600) ? `${Math.floor(s / 3600)}h ${Math.floor(s / 60) % 60}m` : `${Math.floor(s / 60)}m ${s % 60}s`;
}
function fmtPercent(x) { return (100 * (Number(x) || 0)).toFixed(0) + "%"; }
function fmtClock(ms) { return new Date(ms).toISOString().substring(11, 19); }

let messageTimer = null;
/// A note under the header: `kind` "ok" or "error".
function say(text, kind) {
  const m = $("message");
  m.textContent = text;
  m.className = kind || "ok";
  m.hidden = false;
  clearTimeout(messageTimer);
  messageTimer = setTimeout(() => { m.hidden = true; }, kind === "error" ? 15000 : 6000);
}

// ---------------------------------------------------------------- routing

const TABS = ["overview", "subtasks", "metrics", "checkpoints", "savepoints", "exceptions", "tail", "configuration"];
let selected = params.get("job");
let tab = "overview";
let page = "jobs";

/// #/ (jobs), #/submit, #/jobs/{id}/{tab}.
function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  if (parts[0] === "submit") {
    page = "submit";
  } else {
    page = "jobs";
    if (parts[0] === "jobs" && parts[1]) {
      if (parts[1] !== selected) selectJob(parts[1]);
      tab = TABS.includes(parts[2]) ? parts[2] : "overview";
    }
  }
  $("submit-section").hidden = page !== "submit";
  $("jobs-section").hidden = page !== "jobs";
  $("job-section").hidden = page !== "jobs" || !selected;
  $("nav-submit").className = page === "submit" ? "active" : "";
  $("nav-jobs").className = page === "jobs" ? "active" : "";
  for (const t of TABS) $("tab-" + t).hidden = t !== tab;
  for (const a of document.querySelectorAll("#tabs a")) {
    a.className = a.dataset.tab === tab ? "active" : "";
    if (selected) a.href = `#/jobs/${selected}/${a.dataset.tab}`;
  }
  if (tab === "configuration" && selected) loadConfig();
  if (tab === "savepoints") renderSavepoints();
  if (tab === "metrics") renderMetricCharts();
  poll();
}

function go(hash) {
  if (location.hash === hash) route(); else location.hash = hash;
}

// ---------------------------------------------------------------- per job state

let job = null;          // the last GET /jobs/{id}
let samples = new Map(); // "operator|subtask" -> [{t, values}], subtask "all" = the operator's sum
let previous = new Map();// "operator|subtask" -> {t, read, write, bp}
let charts = [];         // [{op, subtask, metric}]
let config = null;       // GET /jobs/{id}/config, once

function selectJob(id) {
  selected = id;
  job = null;
  samples = new Map();
  previous = new Map();
  charts = [];
  config = null;
  stopTail();
  $("subtask-operator").replaceChildren();
  $("metric-operator").replaceChildren();
  $("tail-sink").replaceChildren();
  $("metric-charts").replaceChildren();
  $("config-text").replaceChildren();
  $("config-file").textContent = "";
  $("tail").replaceChildren();
  $("tail-status").textContent = "";
  $("savepoint-target").value = "";
  $("restore-path").value = "";
  $("job-title").textContent = id ? `job ${id}` : "No job selected";
  $("job-state").textContent = "loading...";
  $("job-state").className = "";
  for (const sel of ["#graph", "#chart", "#operators tbody", "#subtasks", "#checkpoints tbody",
    "#checkpoint-summary tbody", "#checkpoint-latest tbody", "#exceptions tbody"])
    document.querySelector(sel).replaceChildren();
  $("checkpoint-counts").textContent = "";
  $("root-exception").textContent = "";
}

// ---------------------------------------------------------------- jobs list

const TERMINAL = ["FINISHED", "STOPPED", "FAILED", "CANCELED"];

/// Running jobs (also CREATED, RESTARTING) and completed ones, as Flink lists them.
function renderJobs(list) {
  const running = document.querySelector("#jobs tbody"), done = document.querySelector("#completed-jobs tbody");
  running.replaceChildren();
  done.replaceChildren();
  if (!selected && list.jobs.length) {
    const running = list.jobs.find(j => j.status === "RUNNING");
    selectJob((running || list.jobs[0]).id);
    route();
  }
  for (const j of list.jobs) {
    const tr = el("tr", undefined, "selectable" + (j.id === selected ? " selected" : ""));
    tr.dataset.job = j.id;
    tr.append(el("td", j.name), el("td", j.id, "mono"), el("td", j.status, "state-" + j.status),
      el("td", fmtTime(j["start-time"])), el("td", fmtDuration(j.duration)));
    tr.onclick = () => go(`#/jobs/${j.id}/${tab}`);
    (TERMINAL.includes(j.status) ? done : running).append(tr);
  }
  for (const body of [running, done])
    if (!body.rows.length) { const tr = el("tr", undefined, "none"); tr.append(el("td", "none")); body.append(tr); }
}

// ---------------------------------------------------------------- graph and operators

function layers(vertices) {
  const byName = new Map(vertices.map(v => [v.name, v]));
  const depth = new Map();
  const d = v => {
    if (depth.has(v.name)) return depth.get(v.name);
    depth.set(v.name, 0);
    let x = 0;
    for (const i of v.inputs) if (byName.has(i)) x = Math.max(x, d(byName.get(i)) + 1);
    depth.set(v.name, x);
    return x;
  };
  vertices.forEach(d);
  return depth;
}

function renderGraph(job) {
  const svg = $("graph");
  svg.replaceChildren();
  const depth = layers(job.vertices);
  const columns = [];
  for (const v of job.vertices) {
    const c = depth.get(v.name);
    (columns[c] = columns[c] || []).push(v);
  }
  const W = 190, H = 62, GX = 60, GY = 16;
  const pos = new Map();
  columns.forEach((col, c) => col.forEach((v, r) => pos.set(v.name, { x: 10 + c * (W + GX), y: 10 + r * (H + GY) })));
  const rows = Math.max(1, ...columns.map(c => c.length));
  svg.setAttribute("height", 20 + rows * (H + GY));
  svg.setAttribute("viewBox", `0 0 ${20 + columns.length * (W + GX)} ${20 + rows * (H + GY)}`);
  for (const v of job.vertices) for (const i of v.inputs) {
    const a = pos.get(i), b = pos.get(v.name);
    if (!a || !b) continue;
    svg.append(svgEl("line", { x1: a.x + W, y1: a.y + H / 2, x2: b.x, y2: b.y + H / 2 }));
  }
  for (const v of job.vertices) {
    const p = pos.get(v.name), m = v.metrics;
    const g = svgEl("g", { class: "operator", "data-operator": v.name });
    const rect = svgEl("rect", { x: p.x, y: p.y, width: W, height: H });
    if (m["backpressure-ratio"] > 0.5) rect.setAttribute("class", "bp");
    g.append(rect);
    const lines = [
      `${v.name} (${v.kind}) x${v.parallelism}`,
      `in ${fmtRate(m["read-records-per-second"])}/s  out ${fmtRate(m["write-records-per-second"])}/s`,
      `backpressure ${fmtPercent(m["backpressure-ratio"])}`,
      `wm ${fmtWatermark(m.watermark)}`,
    ];
    lines.forEach((t, k) => g.append(svgEl("text", { x: p.x + 6, y: p.y + 14 + k * 14 }, t)));
    g.append(svgEl("title", {}, "show the subtasks of " + v.name));
    g.onclick = () => { $("subtask-operator").value = v.name; go(`#/jobs/${selected}/subtasks`); };
    svg.append(g);
  }
}

function renderOperators(job) {
  const body = document.querySelector("#operators tbody");
  body.replaceChildren();
  for (const v of job.vertices) {
    const m = v.metrics;
    const tr = el("tr", undefined, "operator-row");
    tr.dataset.operator = v.name;
    tr.append(el("td", v.name), el("td", v.kind), el("td", String(v.parallelism)),
      el("td", fmtRate(m["read-records-per-second"]), "rate-in"), el("td", fmtRate(m["write-records-per-second"]), "rate-out"),
      el("td", fmtInt(m["read-records"])), el("td", fmtInt(m["write-records"])),
      el("td", fmtPercent(m["backpressure-ratio"])), el("td", fmtWatermark(m.watermark)),
      el("td", fmtInt(m["late-records"])), el("td", fmtInt(m["bad-records"])), el("td", fmtBytes(m["state-size"])));
    body.append(tr);
  }
}

// ---------------------------------------------------------------- samples: per operator and subtask

/// The metrics a chart can show: [key, label, formatter].
const METRICS = [
  ["read-records-per-second", "records in/s", fmtRate],
  ["write-records-per-second", "records out/s", fmtRate],
  ["backpressure-ratio", "backpressure", fmtPercent],
  ["watermark", "watermark", fmtClock],
  ["state-size", "state size", fmtBytes],
  ["read-records", "records in", fmtInt],
  ["write-records", "records out", fmtInt],
  ["source-lag", "source lag (records)", fmtInt],
];
const KEEP_MS = 300000;
const PALETTE = ["#1f6feb", "#d97706", "#1a7f37", "#8250df", "#b42318", "#0e7490", "#9a6700", "#57606a"];

/// Rates of one subtask (or the sum): the server's when it gives them, else
/// the difference from the previous poll.
function rates(key, now, m) {
  const prev = previous.get(key);
  const cur = { t: now, read: m["read-records"] || 0, write: m["write-records"] || 0, bp: m["backpressured-ms"] || 0 };
  previous.set(key, cur);
  const out = {};
  const dt = prev ? (now - prev.t) / 1000 : 0;
  const derived = (k, d) => (k in m ? m[k] : (dt > 0 ? Math.max(0, d) : 0));
  out["read-records-per-second"] = derived("read-records-per-second", dt > 0 ? (cur.read - prev.read) / dt : 0);
  out["write-records-per-second"] = derived("write-records-per-second", dt > 0 ? (cur.write - prev.write) / dt : 0);
  out["backpressure-ratio"] = derived("backpressure-ratio", dt > 0 ? Math.min(1, (cur.bp - prev.bp) / (dt * 1000)) : 0);
  return out;
}

function sample(job) {
  const now = job.now || Date.now();
  const add = (key, values) => {
    let s = samples.get(key);
    if (!s) samples.set(key, s = []);
    if (s.length && s[s.length - 1].t === now) return;
    s.push({ t: now, values });
    while (s.length && s[0].t < now - KEEP_MS) s.shift();
  };
  for (const v of job.vertices) {
    const m = v.metrics;
    const values = Object.assign({}, m);
    values["source-lag"] = (v.subtasks || []).reduce((a, s) => a + (s["source-lag"] || 0), 0);
    add(v.name + "|all", values);
    for (const s of v.subtasks || []) {
      const key = v.name + "|" + s.subtask;
      s.derived = rates(key, now, s);
      add(key, Object.assign({}, s, s.derived));
    }
  }
}

// ---------------------------------------------------------------- subtasks

function fillSelect(sel, options, keep) {
  const have = Array.from(sel.options).map(o => o.value).join("\n");
  if (have === options.map(o => o[0]).join("\n")) return;
  const old = sel.value;
  sel.replaceChildren(...options.map(([value, label]) => { const o = el("option", label); o.value = value; return o; }));
  if (keep && options.some(o => o[0] === old)) sel.value = old;
}

function renderSubtasks(job) {
  const only = $("subtask-operator").value;
  const box = $("subtasks");
  box.replaceChildren();
  for (const v of job.vertices) {
    if (only && v.name !== only) continue;
    const t = el("table", undefined, "subtask-table");
    t.dataset.operator = v.name;
    const head = el("tr");
    for (const h of ["subtask", "records in", "records out", "in/s", "out/s", "bytes in", "bytes out",
      "backpressure", "watermark", "state size", "late", "bad", "source lag"]) head.append(el("th", h));
    t.append(el("caption", `${v.name} (${v.kind}), parallelism ${v.parallelism}`), el("thead"), el("tbody"));
    t.tHead.append(head);
    for (const s of v.subtasks || []) {
      const d = s.derived || {};
      const tr = el("tr");
      tr.dataset.subtask = s.subtask;
      tr.append(el("td", String(s.subtask)),
        el("td", fmtInt(s["read-records"]), "records-in"), el("td", fmtInt(s["write-records"]), "records-out"),
        el("td", fmtRate(d["read-records-per-second"])), el("td", fmtRate(d["write-records-per-second"])),
        el("td", fmtBytes(s["read-bytes"])), el("td", fmtBytes(s["write-bytes"])),
        el("td", fmtPercent(d["backpressure-ratio"]), "backpressure" + (d["backpressure-ratio"] > 0.5 ? " high" : "")),
        el("td", fmtWatermark(s.watermark), "watermark"), el("td", fmtBytes(s["state-size"]), "state-size"),
        el("td", fmtInt(s["late-records"])), el("td", fmtInt(s["bad-records"])),
        el("td", s["source-lag"] === undefined ? "-" : fmtInt(s["source-lag"])));
      t.tBodies[0].append(tr);
    }
    box.append(t);
  }
}

// ---------------------------------------------------------------- charts

/// 1, 2, 5 x 10^n at or above x.
function niceStep(x) {
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

/// A line chart in `svg`: series [{label, color, points: [{t (ms), v}]}],
/// a time axis (UTC clock) and a value axis formatted by `fmt`.
function lineChart(svg, series, fmt, opts) {
  opts = opts || {};
  const W = Number(svg.getAttribute("width")) || 900, H = Number(svg.getAttribute("height")) || 200;
  const L = 64, R = 10, T = 10, B = 24;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.replaceChildren();
  const all = series.flatMap(s => s.points);
  if (all.length < 2) {
    svg.append(svgEl("text", { x: W / 2, y: H / 2, class: "empty", "text-anchor": "middle" }, "waiting for samples..."));
    return;
  }
  let t0 = Math.min(...all.map(p => p.t)), t1 = Math.max(...all.map(p => p.t));
  if (t1 - t0 < 10000) t0 = t1 - 10000;
  let v0 = Math.min(...all.map(p => p.v)), v1 = Math.max(...all.map(p => p.v));
  if (!opts.fitMin) v0 = Math.min(0, v0);
  if (v1 === v0) v1 = v0 + 1;
  // A time-valued axis (the watermark) steps in whole seconds, minutes, hours.
  const vstep = opts.time
    ? ([1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400]
      .map(s => s * 1000).find(s => (v1 - v0) / s <= 5) || niceStep((v1 - v0) / 4))
    : niceStep((v1 - v0) / 4);
  v0 = Math.floor(v0 / vstep) * vstep; v1 = Math.ceil(v1 / vstep) * vstep;
  const x = t => L + (t - t0) / (t1 - t0) * (W - L - R);
  const y = v => H - B - (v - v0) / (v1 - v0) * (H - T - B);
  const axis = svgEl("g", { class: "axis" });
  for (let v = v0; v <= v1 + vstep / 2; v += vstep) {
    axis.append(svgEl("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }));
    axis.append(svgEl("text", { x: L - 4, y: y(v) + 4, "text-anchor": "end", class: "y-tick" }, fmt(v)));
  }
  const tstep = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600].map(s => s * 1000).find(s => (t1 - t0) / s <= 7) || 3600000;
  for (let t = Math.ceil(t0 / tstep) * tstep; t <= t1; t += tstep) {
    axis.append(svgEl("line", { x1: x(t), x2: x(t), y1: T, y2: H - B, class: "grid" }));
    axis.append(svgEl("text", { x: x(t), y: H - 6, "text-anchor": "middle", class: "x-tick" }, fmtClock(t)));
  }
  axis.append(svgEl("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "base" }));
  axis.append(svgEl("text", { x: 4, y: H - 6, class: "unit" }, "UTC"));
  svg.append(axis);
  for (const s of series) {
    if (s.points.length < 2) continue;
    const d = s.points.map((p, i) => (i ? "L" : "M") + x(p.t).toFixed(1) + "," + y(p.v).toFixed(1)).join("");
    const path = svgEl("path", { d, stroke: s.color, class: "series", "data-series": s.label, "data-points": s.points.length });
    path.append(svgEl("title", {}, `${s.label}: ${fmt(s.points[s.points.length - 1].v)}`));
    svg.append(path);
  }
}

function renderThroughput(job) {
  const pts = job.throughput || [];
  lineChart($("chart"), [
    { label: "into sinks", color: "#1f6feb", points: pts.map(p => ({ t: p.t, v: p.in })) },
    { label: "out of sources", color: "#d97706", points: pts.map(p => ({ t: p.t, v: p.out })) },
  ], x => fmtRate(x) + "/s");
}

function fillMetricPickers(job) {
  fillSelect($("metric-operator"), job.vertices.map(v => [v.name, `${v.name} (${v.kind})`]), true);
  const v = job.vertices.find(v => v.name === $("metric-operator").value) || job.vertices[0];
  if (!v) return;
  fillSelect($("metric-subtask"), [["all", "all (sum)"], ["each", "each (one line per subtask)"],
    ...(v.subtasks || []).map(s => [String(s.subtask), "subtask " + s.subtask])], true);
  fillSelect($("metric-name"), METRICS.map(m => [m[0], m[1]]), true);
  if (!charts.length && job.vertices.length) {
    const src = job.vertices.find(v => v["is-source"]) || job.vertices[0];
    charts.push({ op: src.name, subtask: "all", metric: "write-records-per-second" });
  }
}

function renderMetricCharts() {
  const box = $("metric-charts");
  const ids = charts.map(c => `${c.op}|${c.subtask}|${c.metric}`);
  // Keep the chart elements (and their order); draw their series again.
  for (const div of Array.from(box.children)) if (!ids.includes(div.dataset.chart)) div.remove();
  charts.forEach((c, i) => {
    const id = ids[i];
    let div = Array.from(box.children).find(d => d.dataset.chart === id);
    const meta = METRICS.find(m => m[0] === c.metric);
    if (!div) {
      div = el("div", undefined, "metric-chart");
      div.dataset.chart = id;
      const which = c.subtask === "all" ? "" : c.subtask === "each" ? "per subtask " : "subtask " + c.subtask + " ";
      const title = el("h4", `${c.op} ${which}- ${meta[1]}`);
      const close = el("button", "remove", "small");
      close.onclick = () => { charts = charts.filter(x => x !== c); renderMetricCharts(); };
      title.append(" ", close);
      div.append(title, svgEl("svg", { width: 900, height: 180, class: "chart" }));
      box.append(div);
    }
    const points = key => (samples.get(c.op + "|" + key) || [])
      .map(s => ({ t: s.t, v: s.values[c.metric] }))
      .filter(p => typeof p.v === "number" && (c.metric !== "watermark" || isSetWatermark(p.v)));
    let series;
    if (c.subtask === "each") {
      const v = job && job.vertices.find(v => v.name === c.op);
      series = ((v && v.subtasks) || []).map((s, k) => ({ label: `subtask ${s.subtask}`,
        color: PALETTE[k % PALETTE.length], points: points(String(s.subtask)) }));
    } else {
      series = [{ label: meta[1], color: PALETTE[0], points: points(c.subtask) }];
    }
    lineChart(div.querySelector("svg"), series, meta[2],
      { fitMin: c.metric === "watermark", time: c.metric === "watermark" });
    let legend = div.querySelector(".legend");
    if (!legend) div.append(legend = el("div", undefined, "legend"));
    legend.replaceChildren(...(series.length > 1 ? series : []).map(s => {
      const span = el("span", "\u25A0 " + s.label);
      span.style.color = s.color;
      return span;
    }));
  });
}

$("metric-operator").onchange = () => { if (job) fillMetricPickers(job); };
$("metric-add").onclick = () => {
  const c = { op: $("metric-operator").value, subtask: $("metric-subtask").value, metric: $("metric-name").value };
  if (!c.op || !c.metric) return;
  if (!charts.some(x => x.op === c.op && x.subtask === c.subtask && x.metric === c.metric)) charts.push(c);
  renderMetricCharts();
};

// ---------------------------------------------------------------- checkpoints

function stats(values) {
  if (!values.length) return null;
  return { min: Math.min(...values), max: Math.max(...values), avg: values.reduce((a, b) => a + b, 0) / values.length };
}

function renderCheckpoints(cp) {
  $("checkpoint-counts").textContent = cp.enabled
    ? `completed ${cp.counts.completed}, failed ${cp.counts.failed}, in progress ${cp.counts.in_progress}, restored ${cp.counts.restored || 0}`
    : "checkpoints off (the job has no [checkpoint] table)";
  const latest = document.querySelector("#checkpoint-latest tbody");
  latest.replaceChildren();
  const row = (k, v, cls) => { const tr = el("tr", undefined, cls); tr.append(el("th", k), el("td", v)); latest.append(tr); };
  const l = cp.latest || {};
  const c = l.completed;
  row("latest completed", c ? `#${c.id} at ${fmtTime(c.trigger_timestamp)}, ${fmtDuration(c.end_to_end_duration)}, ${fmtBytes(c.state_size)}` : "none");
  const f = l.failed;
  row("latest failed", f ? `#${f.id} at ${fmtTime(f.trigger_timestamp)}: ${f.failure_message || ""}` : "none");
  const r = l.restored;
  if (r) {
    const parts = [];
    if (r.id !== undefined) parts.push(`#${r.id}`);
    if (r.is_savepoint !== undefined) parts.push(r.is_savepoint ? "savepoint" : "checkpoint");
    if (r.external_path) parts.push(r.external_path);
    if (r.restore_timestamp) parts.push("restored at " + fmtTime(r.restore_timestamp));
    for (const k in r) if (!["id", "is_savepoint", "external_path", "restore_timestamp"].includes(k)) parts.push(`${k} ${r[k]}`);
    row("restored", parts.join(", "), "restored");
  } else {
    row("restored", "none (started fresh)", "restored");
  }

  const body = document.querySelector("#checkpoint-summary tbody");
  body.replaceChildren();
  let summary = cp.summary, source = "server";
  if (!summary) {
    const done = cp.history.filter(h => h.status === "COMPLETED");
    summary = { end_to_end_duration: stats(done.map(h => h.end_to_end_duration)),
      state_size: stats(done.map(h => h.state_size)), alignment_duration: stats(done.map(h => h.alignment_duration)) };
    source = "history";
  }
  body.dataset.source = source;
  for (const k of ["min", "avg", "max"]) {
    const tr = el("tr");
    tr.dataset.stat = k;
    const cell = (m, fmt) => {
      const v = summary[m] ? summary[m][k] : null;
      const td = el("td", v === undefined || v === null ? "-" : fmt(v));
      td.dataset.metric = m;
      if (v !== undefined && v !== null) td.dataset.value = v;
      return td;
    };
    tr.append(el("th", k), cell("end_to_end_duration", fmtDuration), cell("state_size", fmtBytes),
      cell("alignment_duration", fmtDuration));
    body.append(tr);
  }

  const hist = document.querySelector("#checkpoints tbody");
  hist.replaceChildren();
  for (const c of cp.history.slice(0, 50)) {
    const tr = el("tr");
    tr.dataset.checkpoint = c.id;
    tr.append(el("td", String(c.id)), el("td", c.status, "state-" + c.status), el("td", fmtTime(c.trigger_timestamp)),
      el("td", fmtDuration(c.end_to_end_duration)), el("td", fmtBytes(c.state_size)),
      el("td", fmtDuration(c.alignment_duration)), el("td", c.failure_message || ""));
    hist.append(tr);
  }
}

// ---------------------------------------------------------------- exceptions

function renderExceptions(ex) {
  $("root-exception").textContent = ex["root-exception"]
    ? `root exception (${fmtTime(ex.timestamp)}): ${ex["root-exception"]}` : "no exceptions";
  const body = document.querySelector("#exceptions tbody");
  body.replaceChildren();
  for (const e of ex.entries.slice(0, 100)) {
    const tr = el("tr", undefined, "exception");
    tr.append(el("td", fmtTime(e.timestamp)), el("td", e.restarted ? "yes" : "no"), el("td", e.message, "message"));
    body.append(tr);
  }
  const a = document.querySelector('#tabs a[data-tab="exceptions"]');
  a.textContent = ex.entries.length ? `Exceptions (${ex.entries.length})` : "Exceptions";
}

// ---------------------------------------------------------------- actions

function renderActions(job) {
  const running = job.state === "RUNNING";
  for (const id of ["cancel-button", "savepoint-button", "stop-button"]) $(id).disabled = !running && id !== "cancel-button";
  $("cancel-button").disabled = TERMINAL.includes(job.state);
}

$("cancel-button").onclick = () => { $("cancel-confirm").hidden = false; $("cancel-button").hidden = true; };
$("cancel-no").onclick = () => { $("cancel-confirm").hidden = true; $("cancel-button").hidden = false; };
$("cancel-yes").onclick = async () => {
  $("cancel-confirm").hidden = true; $("cancel-button").hidden = false;
  const res = await call("DELETE", "/jobs/" + selected);
  if (res.status === 202 || res.status === 200) say(`cancelling job ${selected}`); else say("cancel: " + errorText(res), "error");
  poll();
};

// Savepoints triggered from this browser: localStorage "weir.savepoints",
// [{job, trigger, kind, status, location, checkpoint, size, failure, started}].
function loadSavepoints() {
  try { return JSON.parse(localStorage.getItem("weir.savepoints") || "[]"); } catch (e) { return []; }
}
let savepoints = loadSavepoints();
function saveSavepoints() {
  savepoints = savepoints.slice(0, 200);
  try { localStorage.setItem("weir.savepoints", JSON.stringify(savepoints)); } catch (e) { /* private mode */ }
}

async function triggerSavepoint(stop) {
  const dir = $("savepoint-target").value.trim();
  const res = stop
    ? await call("POST", `/jobs/${selected}/stop`, { targetDirectory: dir, drain: false })
    : await call("POST", `/jobs/${selected}/savepoints`, { "target-directory": dir, "cancel-job": false });
  const what = stop ? "stop with savepoint" : "savepoint";
  if (res.status !== 202) { say(`${what}: ${errorText(res)}`, "error"); return; }
  savepoints.unshift({ job: selected, trigger: res.json["request-id"], kind: stop ? "stop" : "savepoint",
    status: "IN_PROGRESS", location: res.json.location || dir, started: Date.now() });
  saveSavepoints();
  say(`${what} triggered: ${res.json["request-id"]}`);
  go(`#/jobs/${selected}/savepoints`);
  pollSavepoints();
}
$("savepoint-button").onclick = () => triggerSavepoint(false);
$("stop-button").onclick = () => triggerSavepoint(true);

let savepointTimer = null;
async function pollSavepoints() {
  clearTimeout(savepointTimer);
  const open = savepoints.filter(s => s.status === "IN_PROGRESS");
  await Promise.all(open.map(async s => {
    const res = await call("GET", `/jobs/${s.job}/savepoints/${s.trigger}`).catch(() => null);
    if (!res) return;
    if (res.status === 404) { s.status = "UNKNOWN"; s.failure = "the server no longer knows this trigger"; return; }
    if (res.status !== 200) return;
    s.status = res.json.status.id;
    const op = res.json.operation;
    if (s.status === "COMPLETED") { s.location = op.location; s.checkpoint = op["checkpoint-id"]; s.size = op.size; s.finished = Date.now(); }
    if (s.status === "FAILED") { s.failure = op["failure-cause"] ? op["failure-cause"]["stack-trace"] : "failed"; s.finished = Date.now(); }
    if (s.status !== "IN_PROGRESS") say(`savepoint ${s.trigger}: ${s.status}`, s.status === "COMPLETED" ? "ok" : "error");
  }));
  if (open.length) saveSavepoints();
  renderSavepoints();
  if (savepoints.some(s => s.status === "IN_PROGRESS")) savepointTimer = setTimeout(pollSavepoints, 250);
}

function renderSavepoints() {
  const body = document.querySelector("#savepoints tbody");
  body.replaceChildren();
  const mine = savepoints.filter(s => s.job === selected);
  if (!mine.length) { const tr = el("tr", undefined, "none"); tr.append(el("td", "none yet")); body.append(tr); }
  for (const s of mine) {
    const tr = el("tr", undefined, "savepoint");
    tr.dataset.trigger = s.trigger;
    tr.dataset.status = s.status;
    const status = el("td", undefined, "status state-" + s.status);
    status.append(el("span", s.status));
    if (s.status === "IN_PROGRESS") {
      status.append(" ", el("progress"), ` ${((Date.now() - s.started) / 1000).toFixed(1)} s`);
    } else if (s.finished) {
      status.append(` in ${fmtDuration(s.finished - s.started)}`);
    }
    if (s.failure) status.append(el("div", s.failure, "failure"));
    const act = el("td");
    if (s.status === "COMPLETED") {
      const b = el("button", "Restart from it", "small restart");
      b.onclick = () => restartFrom(s.location);
      act.append(b);
    }
    tr.append(el("td", s.trigger, "mono"), el("td", s.kind === "stop" ? "stop with savepoint" : "savepoint"), status,
      el("td", s.location || "-", "mono location"), el("td", s.checkpoint === undefined ? "-" : String(s.checkpoint)),
      el("td", s.size === undefined ? "-" : fmtBytes(s.size)), act);
    body.append(tr);
  }
}

/// GET /jobs/{id}/config for this job's TOML (cached); null and a message when the server has none.
async function jobConfig() {
  if (config && config.jid === selected) return config;
  const res = await call("GET", `/jobs/${selected}/config`);
  if (res.status !== 200) {
    say(`this job's configuration: ${res.status === 404 ? "not offered by this server (GET /jobs/{id}/config)" : errorText(res)}`, "error");
    return null;
  }
  config = Object.assign({ jid: selected }, res.json);
  return config;
}

/// Starts this job's pipeline again, restored from the savepoint at `path`.
async function restartFrom(path) {
  if (!path) { say("restart: no savepoint given", "error"); return; }
  const c = await jobConfig();
  if (!c) return;
  const q = `?savepointPath=${encodeURIComponent(path)}&file=${encodeURIComponent(baseName(c.file || "job.toml"))}`;
  const res = await call("POST", "/jobs" + q, c.toml);
  if (res.status !== 202) { say("restart from savepoint: " + errorText(res), "error"); return; }
  say(`job ${res.json.jobid} started from ${path}`);
  go(`#/jobs/${res.json.jobid}/checkpoints`);
}
$("restore-button").onclick = () => restartFrom($("restore-path").value.trim());

function baseName(p) { return String(p).split("/").pop() || "job.toml"; }

// ---------------------------------------------------------------- configuration

async function loadConfig() {
  const c = await jobConfig();
  const pre = $("config-text");
  if (!c) { $("config-file").textContent = "not available"; return; }
  $("config-file").replaceChildren(el("span", `${c.name || ""} from ${c.file || "-"} `));
  const edit = el("button", "Edit and submit as a new job", "small");
  edit.onclick = () => { $("submit-text").value = c.toml; $("submit-name").value = baseName(c.file || "job.toml"); updateGutter([]); go("#/submit"); };
  $("config-file").append(edit);
  pre.replaceChildren(...c.toml.split("\n").map((line, i) => {
    const d = el("div", undefined, "src-line");
    d.append(el("span", String(i + 1), "ln"), el("code", line));
    return d;
  }));
}

// ---------------------------------------------------------------- live tail of a sink

let tail = null;
const TAIL_ROWS = 500;
// Rows arrive faster than a page can lay them out (thousands a second):
// they queue here and are drawn five times a second, the newest TAIL_ROWS.
let tailQueue = [];
let tailTimer = null;
function stopTail() {
  if (tail) tail.close();
  tail = null;
  flushTail();
  clearInterval(tailTimer);
  tailTimer = null;
  $("tail-start").disabled = false;
  $("tail-stop").disabled = true;
}
function flushTail() {
  if (!tailQueue.length || $("tail-pause").checked) return;
  const box = $("tail");
  const rows = tailQueue.slice(-TAIL_ROWS);
  tailQueue = [];
  const frag = document.createDocumentFragment();
  for (const [text, cls] of rows) frag.append(el("div", text, cls));
  box.append(frag);
  while (box.childElementCount > TAIL_ROWS) box.firstElementChild.remove();
  box.scrollTop = box.scrollHeight;
}
function tailLine(text, cls) {
  tailQueue.push([text, cls || "tail-row"]);
  if (tailQueue.length > 4 * TAIL_ROWS) tailQueue = tailQueue.slice(-TAIL_ROWS);
}
$("tail-start").onclick = () => {
  stopTail();
  const sink = $("tail-sink").value;
  if (!sink) return;
  $("tail").replaceChildren();
  let rows = 0;
  const status = $("tail-status");
  status.textContent = "connecting...";
  const es = new EventSource(withToken(`/jobs/${selected}/sinks/${encodeURIComponent(sink)}/stream`));
  tail = es;
  const following = () => { status.textContent = `following ${sink}: ${fmtInt(rows)} rows`; };
  tailTimer = setInterval(() => { flushTail(); if (tail === es) following(); }, 200);
  es.addEventListener("subscribed", following);
  es.onmessage = e => { rows++; tailLine(e.data); };
  es.addEventListener("skipped", e => { tailLine(`... ${JSON.parse(e.data).skipped_rows} rows skipped (the server's queue for this page was full)`, "tail-note"); });
  es.addEventListener("end", e => { tailLine(`end of stream: job ${JSON.parse(e.data).state}`, "tail-note"); stopTail(); status.textContent = `ended after ${fmtInt(rows)} rows`; });
  es.onerror = () => { if (tail === es && es.readyState === EventSource.CLOSED) { stopTail(); status.textContent = "disconnected"; } };
  $("tail-start").disabled = true;
  $("tail-stop").disabled = false;
};
$("tail-stop").onclick = () => { stopTail(); $("tail-status").textContent = "stopped"; };

// ---------------------------------------------------------------- submit

function updateGutter(diagnostics) {
  const text = $("submit-text").value;
  const n = text.split("\n").length;
  const bad = new Set(diagnostics.map(d => d.line));
  const g = $("submit-gutter");
  g.replaceChildren();
  for (let i = 1; i <= n; i++) {
    const d = el("div", String(i), bad.has(i) ? "ln error" : "ln");
    if (bad.has(i)) d.title = diagnostics.filter(x => x.line === i).map(x => x.message).join("\n");
    g.append(d);
  }
  g.scrollTop = $("submit-text").scrollTop;
}
$("submit-text").addEventListener("input", () => updateGutter([]));
$("submit-text").addEventListener("keydown", e => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); $("submit-button").click(); }
});
$("submit-text").addEventListener("scroll", () => { $("submit-gutter").scrollTop = $("submit-text").scrollTop; });
$("submit-file").onchange = async () => {
  const f = $("submit-file").files[0];
  if (!f) return;
  $("submit-text").value = await f.text();
  $("submit-name").value = f.name;
  updateGutter([]);
};

/// Moves the editor's cursor to line:column (1-based).
function jumpTo(line, column) {
  const ta = $("submit-text");
  const lines = ta.value.split("\n");
  let at = 0;
  for (let i = 0; i < line - 1 && i < lines.length; i++) at += lines[i].length + 1;
  at += Math.max(0, (column || 1) - 1);
  ta.focus();
  ta.setSelectionRange(at, at);
  ta.scrollTop = Math.max(0, (line - 3) * parseFloat(getComputedStyle(ta).lineHeight || "16"));
}

/// The source with each diagnostic under its line, a caret at its column.
function renderDiagnostics(text, diagnostics) {
  const box = $("submit-annotated");
  box.replaceChildren();
  const byLine = new Map();
  for (const d of diagnostics) {
    if (!byLine.has(d.line)) byLine.set(d.line, []);
    byLine.get(d.line).push(d);
  }
  const diag = d => {
    const div = el("div", undefined, "diag");
    div.dataset.line = d.line;
    div.dataset.column = d.column;
    if (d.line > 0) div.append(el("span", " ".repeat(Math.max(0, d.column - 1)) + "^", "caret"));
    const msg = el("div", `${d.file}:${d.line}:${d.column}: ${d.message}`, "diag-message");
    div.append(msg);
    for (const n of d.notes || []) div.append(el("div", "note: " + n, "diag-note"));
    div.onclick = () => jumpTo(d.line, d.column);
    return div;
  };
  for (const d of byLine.get(0) || []) box.append(diag(d));
  const lines = text.split("\n");
  const pre = el("pre", undefined, "annotated");
  lines.forEach((line, i) => {
    const n = i + 1;
    const row = el("div", undefined, "src-line" + (byLine.has(n) ? " has-error" : ""));
    row.dataset.line = n;
    row.append(el("span", String(n), "ln"), el("code", line));
    pre.append(row);
    for (const d of byLine.get(n) || []) pre.append(diag(d));
  });
  for (const [n, ds] of byLine) if (n > lines.length) for (const d of ds) pre.append(diag(d));
  box.append(pre);
}

$("submit-button").onclick = async () => {
  const text = $("submit-text").value;
  const name = baseName($("submit-name").value.trim() || "submitted.toml");
  const sp = $("submit-savepoint").value.trim();
  let q = "?file=" + encodeURIComponent(name);
  if (sp) q += "&savepointPath=" + encodeURIComponent(sp);
  const result = $("submit-result");
  result.replaceChildren();
  $("submit-annotated").replaceChildren();
  const res = await call("POST", "/jobs" + q, text);
  if (res.status === 202) {
    updateGutter([]);
    say(`job ${res.json.jobid} submitted`);
    go(`#/jobs/${res.json.jobid}/overview`);
    return;
  }
  const ds = (res.json && res.json.diagnostics) || [];
  result.append(el("div", ds.length ? `${ds.length} error${ds.length > 1 ? "s" : ""} in ${name}` : "refused: " + errorText(res), "submit-error"));
  updateGutter(ds);
  if (ds.length) renderDiagnostics(text, ds);
};

// ---------------------------------------------------------------- the poll

let polling = false, pollAgain = false;
/// One round of GETs and the redraw of what they change; a call while one
/// is under way runs once more after it (a job or tab just chosen).
async function poll() {
  if (polling) { pollAgain = true; return; }
  polling = true;
  pollAgain = false;
  try {
    const [ov, list] = await Promise.all([api("/overview"), api("/jobs")]);
    $("overview").textContent =
      `weir ${ov["weir-version"]} | running ${ov["jobs-running"]} | finished ${ov["jobs-finished"]} | failed ${ov["jobs-failed"]} | canceled ${ov["jobs-cancelled"]}`;
    renderJobs(list);
    if (!selected || page !== "jobs") return;
    const id = selected;
    const [j, cp, ex] = await Promise.all([api("/jobs/" + id), api("/jobs/" + id + "/checkpoints"),
      api("/jobs/" + id + "/exceptions")]);
    if (id !== selected) return;
    job = j;
    $("job-title").textContent = `${j.name} (${j.jid})`;
    const st = $("job-state");
    st.textContent = `${j.state}, ${TERMINAL.includes(j.state) ? "ran" : "running for"} ${fmtDuration(j.duration)}, ${j.restarts} restarts`;
    st.className = "state-" + j.state;
    sample(j);
    renderActions(j);
    fillSelect($("tail-sink"), j.vertices.filter(v => v["is-sink"]).map(v => [v.name, v.name]), true);
    fillMetricPickers(j);
    fillSelect($("subtask-operator"), [["", "all operators"], ...j.vertices.map(v => [v.name, v.name])], true);
    if (tab === "overview") { renderGraph(j); renderOperators(j); renderThroughput(j); }
    if (tab === "subtasks") renderSubtasks(j);
    if (tab === "metrics") renderMetricCharts();
    if (tab === "savepoints") renderSavepoints();
    renderCheckpoints(cp);
    renderExceptions(ex);
  } catch (e) {
    $("overview").textContent = "error: " + e.message;
  } finally {
    polling = false;
    if (pollAgain) poll();
  }
}

$("subtask-operator").onchange = () => { if (job) renderSubtasks(job); };
window.addEventListener("hashchange", route);
updateGutter([]);
route();
pollSavepoints();
setInterval(poll, 1000);
