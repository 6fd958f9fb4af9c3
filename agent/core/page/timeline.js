// SPDX-License-Identifier: Apache-2.0
// cubelet's live timeline page: /timelines?watch=true (server-sent events:
// a "snapshot", then "pod", "step" and "entry" changes) drawn as one row per
// pod on a shared time axis. No polling: the server pushes every change; a
// local one-second tick only moves "now" for spans still open.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token") || "";
  const state = { pods: new Map(), selected: null, lags: {}, drawn: new Set(), events: 0 };
  window.cubeletTimeline = state; // for tests and the curious (devtools)
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown"];
  const podLevel = (step) => /^(phase|statusDelivered):/.test(step) || step.indexOf(":") < 0;
  const ctrOf = (step) => (podLevel(step) ? null : step.slice(step.indexOf(":") + 1));
  const fmtMs = (us) => (us / 1000).toFixed(us < 10000 ? 2 : 1) + " ms";

  function pod(uid, meta) {
    let p = state.pods.get(uid);
    if (!p) {
      p = { uid, namespace: "", name: uid, gone: false, timeline: [], history: [] };
      state.pods.set(uid, p);
    }
    if (meta) {
      for (const k of ["namespace", "name", "gone", "dropped"]) if (k in meta) p[k] = meta[k];
    }
    return p;
  }

  function snapshot(doc) {
    state.pods.clear();
    for (const p of doc.pods || []) {
      const q = pod(p.uid, p);
      q.timeline = p.timeline || [];
      q.history = p.history || [];
    }
  }

  // Spans and marks of one pod, as the trace export draws them.
  function shapes(p, now) {
    const out = { phases: [], runs: [], marks: [] };
    const end = p.gone || !p.timeline.length ? lastTime(p) : Math.max(now, lastTime(p));
    let phase = null;
    const open = new Map();
    const started = new Set();
    for (const s of p.timeline) {
      const t = s.timeUs;
      let cls = "";
      if (s.step.startsWith("phase:")) {
        if (phase) out.phases.push({ name: phase.name, from: phase.t, to: t });
        phase = { name: s.step.slice(6), t };
      }
      const c = ctrOf(s.step);
      if (c && s.step.startsWith("containerStarted:")) {
        if (started.has(c)) cls = "restart";
        started.add(c);
        if (open.has(c)) out.runs.push({ c, from: open.get(c), to: t });
        open.set(c, t);
      } else if (c && s.step.startsWith("containerExited:") && open.has(c)) {
        out.runs.push({ c, from: open.get(c), to: t });
        open.delete(c);
      }
      if (/^(ready|notReady|startupProbeSucceeded):/.test(s.step)) cls = "probe";
      out.marks.push({ t, cls, title: s.step + "  +" + fmtMs(s.offsetUs) });
    }
    if (phase) out.phases.push({ name: phase.name, from: phase.t, to: end });
    for (const [c, t] of open) out.runs.push({ c, from: t, to: end });
    for (const h of p.history) {
      const cls = h.kind === "status" ? "status" : h.kind === "statusAck" ? "ack" : h.kind === "spec" ? "spec" : "";
      if (!cls) continue;
      out.marks.push({ t: h.timeUs, cls, title: h.kind + (h.phase ? " " + h.phase : "") + (h.object ? " " + h.object : "") + "  +" + fmtMs(h.offsetUs) });
    }
    return out;
  }

  function firstTime(p) {
    const a = p.timeline.length ? p.timeline[0].timeUs : Infinity;
    const b = p.history.length ? p.history[0].timeUs : Infinity;
    return Math.min(a, b);
  }
  function lastTime(p) {
    const a = p.timeline.length ? p.timeline[p.timeline.length - 1].timeUs : 0;
    const b = p.history.length ? p.history[p.history.length - 1].timeUs : 0;
    return Math.max(a, b);
  }

  let pending = false;
  function schedule() {
    if (!pending) {
      pending = true;
      requestAnimationFrame(render);
    }
  }

  function render() {
    pending = false;
    const now = Date.now() * 1000;
    const pods = [...state.pods.values()];
    let t0 = Infinity, t1 = 0;
    for (const p of pods) {
      t0 = Math.min(t0, firstTime(p));
      t1 = Math.max(t1, p.gone ? lastTime(p) : now);
    }
    if (!isFinite(t0)) { t0 = now - 1e6; t1 = now; }
    if (t1 <= t0) t1 = t0 + 1e6;
    const x = (t) => (((t - t0) / (t1 - t0)) * 100).toFixed(3) + "%";
    const axis = $("axis");
    axis.replaceChildren();
    for (let i = 0; i <= 5; i++) {
      const t = t0 + ((t1 - t0) * i) / 5;
      const s = el("span", "", i === 0 ? new Date(t / 1000).toLocaleTimeString() : "+" + ((t - t0) / 1e6).toFixed(1) + " s");
      s.style.left = (i * 20) + "%";
      axis.appendChild(s);
    }
    const rows = $("rows");
    rows.replaceChildren();
    for (const p of pods) {
      const sh = shapes(p, now);
      const row = el("div", "row" + (p.gone ? " gone" : "") + (state.selected === p.uid ? " sel" : ""));
      row.dataset.uid = p.uid;
      row.dataset.name = p.namespace + "/" + p.name;
      const last = sh.phases.length ? sh.phases[sh.phases.length - 1].name : "";
      row.dataset.phase = last;
      const label = el("div", "label");
      label.appendChild(el("span", "", p.namespace + "/" + p.name + " "));
      label.appendChild(el("small", "", last + (p.gone ? " (gone)" : "")));
      row.appendChild(label);
      const track = el("div", "track");
      for (const s of sh.phases) {
        const d = el("div", "span " + (PHASES.includes(s.name) ? s.name : "Unknown"));
        d.style.left = x(s.from);
        d.style.width = "calc(" + x(s.to) + " - " + x(s.from) + ")";
        d.title = s.name + " " + fmtMs(s.to - s.from);
        track.appendChild(d);
      }
      const ctrs = [...new Set(sh.runs.map((r) => r.c))];
      for (const r of sh.runs) {
        const d = el("div", "run");
        d.style.left = x(r.from);
        d.style.width = "max(1px, calc(" + x(r.to) + " - " + x(r.from) + "))";
        d.style.top = (1.25 + 0.45 * ctrs.indexOf(r.c)) + "em";
        d.title = r.c + " running " + fmtMs(r.to - r.from);
        track.appendChild(d);
      }
      for (const m of sh.marks) {
        const d = el("div", "mark " + m.cls);
        d.style.left = x(m.t);
        d.title = m.title;
        track.appendChild(d);
      }
      row.appendChild(track);
      row.addEventListener("click", () => { state.selected = p.uid; schedule(); });
      rows.appendChild(row);
      // How long after each step the page showed it (the tests read it).
      for (const s of p.timeline) {
        const key = p.uid + " " + s.step + " " + s.offsetUs;
        if (!state.drawn.has(key)) {
          state.drawn.add(key);
          (state.lags[p.namespace + "/" + p.name] ||= {})[s.step] = Date.now() - s.timeUs / 1000;
        }
      }
    }
    detail();
  }

  function diffList(diff) {
    const ul = el("ul", "diff");
    for (const op of diff || []) {
      const li = el("li", op.op === "add" ? "add" : op.op === "remove" ? "remove" : "change");
      li.appendChild(el("span", "", op.op + " "));
      li.appendChild(el("code", "", op.path || ""));
      if ("old" in op) li.appendChild(el("del", "", " " + JSON.stringify(op.old).slice(0, 300)));
      if ("new" in op) li.appendChild(el("ins", "", " " + JSON.stringify(op.new).slice(0, 300)));
      if (op.op === "truncated") li.appendChild(el("span", "", " (" + op.omitted + " more)"));
      ul.appendChild(li);
    }
    return ul;
  }

  function detail() {
    const box = $("detail");
    const p = state.pods.get(state.selected);
    if (!p) { box.hidden = true; return; }
    box.hidden = false;
    box.replaceChildren(el("h2", "", p.namespace + "/" + p.name + "  (uid " + p.uid + ")" + (p.gone ? ", gone" : "")));
    box.appendChild(el("h3", "", "Steps"));
    const t = el("table", "steps");
    const head = el("tr");
    for (const h of ["step", "offset", "since previous", ""]) head.appendChild(el("th", "", h));
    t.appendChild(head);
    let prev = 0, max = 1;
    for (const s of p.timeline) { max = Math.max(max, s.offsetUs - prev); prev = s.offsetUs; }
    prev = 0;
    for (const s of p.timeline) {
      const tr = el("tr");
      tr.appendChild(el("td", "", s.step));
      tr.appendChild(el("td", "num", fmtMs(s.offsetUs)));
      tr.appendChild(el("td", "num", fmtMs(s.offsetUs - prev)));
      const bar = el("span", "bar");
      bar.style.width = Math.round(((s.offsetUs - prev) / max) * 240) + "px";
      const td = el("td");
      td.appendChild(bar);
      tr.appendChild(td);
      t.appendChild(tr);
      prev = s.offsetUs;
    }
    box.appendChild(t);
    box.appendChild(el("h3", "", "Status changes sent, spec changes observed, events" + (p.dropped ? " (" + p.dropped + " older dropped)" : "")));
    const list = el("div", "history");
    for (const h of p.history) {
      const e = el("div", "entry " + h.kind);
      e.appendChild(el("b", "", "+" + fmtMs(h.offsetUs) + " "));
      if (h.kind === "status") {
        e.appendChild(el("span", "", "status sent" + (h.phase ? " (" + h.phase + ")" : "") + (h.resent ? ", unchanged (resent)" : "")));
        e.appendChild(diffList(h.diff));
      } else if (h.kind === "statusAck") {
        e.appendChild(el("span", "", h.accepted ? "status acknowledged (" + h.code + ")" : "status not accepted (" + h.code + ")"));
      } else if (h.kind === "spec") {
        e.appendChild(el("span", "", "spec change of " + h.object));
        e.appendChild(diffList(h.diff));
      } else if (h.kind === "event") {
        e.appendChild(el("span", "", "event " + h.type + " " + h.reason + ": " + h.message + (h.fieldPath ? " (" + h.fieldPath + ")" : "")));
      }
      list.appendChild(e);
    }
    box.appendChild(list);
  }

  function connect() {
    const conn = $("conn");
    const es = new EventSource("/timelines?watch=true&token=" + encodeURIComponent(token));
    es.addEventListener("open", () => { conn.textContent = "live"; conn.className = "conn open"; document.body.dataset.stream = "open"; });
    es.addEventListener("error", () => { conn.textContent = "reconnecting..."; conn.className = "conn closed"; document.body.dataset.stream = "closed"; });
    es.addEventListener("snapshot", (e) => { snapshot(JSON.parse(e.data)); state.events++; schedule(); });
    es.addEventListener("pod", (e) => { const d = JSON.parse(e.data); pod(d.uid, d); state.events++; schedule(); });
    es.addEventListener("step", (e) => {
      const d = JSON.parse(e.data);
      pod(d.uid).timeline.push({ step: d.step, offsetUs: d.offsetUs, time: d.time, timeUs: d.timeUs });
      state.events++;
      schedule();
    });
    es.addEventListener("entry", (e) => { const d = JSON.parse(e.data); pod(d.uid).history.push(d.entry); state.events++; schedule(); });
  }

  document.documentElement.classList.add("js");
  $("static").hidden = true;
  $("live").hidden = false;
  $("legend").hidden = false;
  $("conn").textContent = "connecting...";
  connect();
  // Open spans grow with the clock; redraw once a second (no request).
  setInterval(schedule, 1000);
})();
