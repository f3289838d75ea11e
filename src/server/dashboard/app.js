// weir dashboard: polls the JSON API once a second (no libraries, no CDN).
"use strict";
const params = new URLSearchParams(location.search);
const token = params.get("access_token");
let selected = params.get("job");

function api(path) {
  const url = token ? path + (path.includes("?") ? "&" : "?") + "access_token=" + encodeURIComponent(token) : path;
  return fetch(url).then(r => { if (!r.ok) throw new Error(path + ": " + r.status); return r.json(); });
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function fmtRate(x) { return x >= 1000 ? (x / 1000).toFixed(1) + "k" : x.toFixed(x < 10 ? 1 : 0); }
function fmtInt(x) { return Number(x).toLocaleString("en-US"); }
function fmtBytes(b) {
  const u = ["B", "KiB", "MiB", "GiB"]; let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return b.toFixed(i ? 1 : 0) + " " + u[i];
}
function fmtTime(ms) { return ms === null || ms === undefined ? "-" : new Date(ms).toISOString().replace(".000Z", "Z"); }
function fmtWatermark(ms) {
  if (ms === null || ms === undefined) return "-";
  if (ms >= 9.2e18) return "+inf";
  return fmtTime(ms);
}
function fmtDuration(ms) { return ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(1) + " s"; }

function renderJobs(list) {
  const body = document.querySelector("#jobs tbody");
  body.replaceChildren();
  if (!selected && list.jobs.length) {
    const running = list.jobs.find(j => j.status === "RUNNING");
    selected = (running || list.jobs[0]).id;
  }
  for (const j of list.jobs) {
    const tr = el("tr", undefined, "selectable" + (j.id === selected ? " selected" : ""));
    tr.append(el("td", j.name), el("td", j.id), el("td", j.status, "state-" + j.status), el("td", fmtDuration(j.duration)));
    tr.onclick = () => { selected = j.id; poll(); };
    body.append(tr);
  }
}

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
  const svg = document.getElementById("graph");
  const ns = "http://www.w3.org/2000/svg";
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
    const line = document.createElementNS(ns, "line");
    line.setAttribute("x1", a.x + W); line.setAttribute("y1", a.y + H / 2);
    line.setAttribute("x2", b.x); line.setAttribute("y2", b.y + H / 2);
    svg.append(line);
  }
  for (const v of job.vertices) {
    const p = pos.get(v.name), m = v.metrics;
    const g = document.createElementNS(ns, "g");
    g.setAttribute("class", "operator");
    g.setAttribute("data-operator", v.name);
    const rect = document.createElementNS(ns, "rect");
    rect.setAttribute("x", p.x); rect.setAttribute("y", p.y); rect.setAttribute("width", W); rect.setAttribute("height", H);
    if (m["backpressure-ratio"] > 0.5) rect.setAttribute("class", "bp");
    g.append(rect);
    const lines = [
      `${v.name} (${v.kind}) x${v.parallelism}`,
      `in ${fmtRate(m["read-records-per-second"])}/s  out ${fmtRate(m["write-records-per-second"])}/s`,
      `backpressure ${(100 * m["backpressure-ratio"]).toFixed(0)}%`,
      `wm ${fmtWatermark(m.watermark)}`,
    ];
    lines.forEach((t, k) => {
      const text = document.createElementNS(ns, "text");
      text.setAttribute("x", p.x + 6); text.setAttribute("y", p.y + 14 + k * 14);
      text.textContent = t;
      g.append(text);
    });
    svg.append(g);
  }
}

function renderOperators(job) {
  const body = document.querySelector("#operators tbody");
  body.replaceChildren();
  for (const v of job.vertices) {
    const m = v.metrics;
    const tr = el("tr");
    tr.className = "operator-row";
    tr.append(el("td", v.name), el("td", v.kind), el("td", String(v.parallelism)),
      el("td", fmtRate(m["read-records-per-second"]), "rate-in"), el("td", fmtRate(m["write-records-per-second"]), "rate-out"),
      el("td", fmtInt(m["read-records"])), el("td", fmtInt(m["write-records"])),
      el("td", (100 * m["backpressure-ratio"]).toFixed(0) + "%"), el("td", fmtWatermark(m.watermark)),
      el("td", fmtInt(m["late-records"])), el("td", fmtInt(m["bad-records"])), el("td", fmtBytes(m["state-size"])));
    body.append(tr);
  }
}

function renderChart(job) {
  const canvas = document.getElementById("chart");
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  const pts = job.throughput.slice(-120);
  const max = Math.max(1, ...pts.map(p => Math.max(p.in, p.out)));
  ctx.fillStyle = "#58646f"; ctx.font = "11px sans-serif";
  ctx.fillText(fmtRate(max) + "/s", 4, 12);
  ctx.strokeStyle = "#eceff2"; ctx.beginPath(); ctx.moveTo(0, h - 1); ctx.lineTo(w, h - 1); ctx.stroke();
  const draw = (key, color) => {
    if (pts.length < 2) return;
    ctx.strokeStyle = color; ctx.lineWidth = 2; ctx.beginPath();
    pts.forEach((p, i) => {
      const x = (i / (pts.length - 1)) * (w - 10) + 5, y = h - 5 - (p[key] / max) * (h - 20);
      i ? ctx.lineTo(x, y) : ctx.moveTo(x, y);
    });
    ctx.stroke();
  };
  draw("out", "#d97706");
  draw("in", "#1f6feb");
}

function renderCheckpoints(cp) {
  document.getElementById("checkpoint-counts").textContent = cp.enabled
    ? `completed ${cp.counts.completed}, failed ${cp.counts.failed}, in progress ${cp.counts.in_progress}`
    : "checkpoints off";
  const body = document.querySelector("#checkpoints tbody");
  body.replaceChildren();
  for (const c of cp.history.slice(0, 20)) {
    const tr = el("tr");
    tr.append(el("td", String(c.id)), el("td", c.status, "state-" + c.status), el("td", fmtTime(c.trigger_timestamp)),
      el("td", fmtDuration(c.end_to_end_duration)), el("td", fmtBytes(c.state_size)),
      el("td", fmtDuration(c.alignment_duration)), el("td", c.failure_message || ""));
    body.append(tr);
  }
}

function renderExceptions(ex) {
  const ul = document.getElementById("exceptions");
  ul.replaceChildren();
  if (!ex.entries.length) ul.append(el("li", "none"));
  for (const e of ex.entries.slice(0, 20))
    ul.append(el("li", `${fmtTime(e.timestamp)} ${e.restarted ? "(restarted) " : ""}${e.message}`));
}

async function poll() {
  try {
    const [ov, list] = await Promise.all([api("/overview"), api("/jobs")]);
    document.getElementById("overview").textContent =
      `weir ${ov["weir-version"]} | running ${ov["jobs-running"]} | finished ${ov["jobs-finished"]} | failed ${ov["jobs-failed"]} | canceled ${ov["jobs-cancelled"]}`;
    renderJobs(list);
    if (!selected) return;
    const [job, cp, ex] = await Promise.all([api("/jobs/" + selected), api("/jobs/" + selected + "/checkpoints"),
      api("/jobs/" + selected + "/exceptions")]);
    document.getElementById("job-title").textContent = `${job.name} (${job.jid})`;
    const st = document.getElementById("job-state");
    st.textContent = `${job.state}, running for ${fmtDuration(job.duration)}, ${job.restarts} restarts`;
    st.className = "state-" + job.state;
    renderGraph(job);
    renderOperators(job);
    renderChart(job);
    renderCheckpoints(cp);
    renderExceptions(ex);
  } catch (e) {
    document.getElementById("overview").textContent = "error: " + e.message;
  }
}

poll();
setInterval(poll, 1000);
