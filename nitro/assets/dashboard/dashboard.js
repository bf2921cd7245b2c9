// Fulcrum's dashboard: reads NITRO (config and stat resources) once a second, draws the
// vservers, services, live rates and drops. Everything is built with textContent: no value
// from the API is ever parsed as HTML.
"use strict";

const API = "/nitro/v1";
const POLL_MS = 1000;
const KEPT = 120; // samples per chart: two minutes
const CHARTS = [
  { id: "chart-hits", key: "hitsrate" },
  { id: "chart-packets", key: "pktsrecvdrate" },
  { id: "chart-bytes", key: "requestbytesrate" },
  { id: "chart-active", key: "curclntconnections" },
];
const COLOURS = ["#2f6fde", "#d9480f", "#2b8a3e", "#862e9c", "#e67700", "#0b7285", "#c2255c", "#5c940d"];

const $ = (id) => document.getElementById(id);
let timer = null;
let history = { times: [], vservers: [], values: {} };
let plots = {};

async function nitro(path, options = {}) {
  const reply = await fetch(API + path, {
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    ...options,
  });
  let body = {};
  try { body = await reply.json(); } catch (_) { /* an empty body */ }
  return { status: reply.status, body };
}

function show(loggedIn) {
  $("login").hidden = loggedIn;
  $("dashboard").hidden = !loggedIn;
  $("logout").hidden = !loggedIn;
}

function loggedOut(message) {
  if (timer) { clearInterval(timer); timer = null; }
  show(false);
  $("login-error").textContent = message || "";
  $("username").focus();
}

function human(n) {
  n = Number(n) || 0;
  for (const [unit, size] of [["G", 1e9], ["M", 1e6], ["k", 1e3]]) {
    if (Math.abs(n) >= size) return (n / size).toFixed(1) + " " + unit;
  }
  return String(Math.round(n));
}

function cell(row, text, cls) {
  const td = row.insertCell();
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

function stateCell(row, state) {
  cell(row, state, "state state-" + String(state).replace(/ /g, "_"));
}

function fill(tableId, items, draw) {
  const body = $(tableId).tBodies[0];
  body.replaceChildren();
  for (const item of items) draw(body.insertRow(), item);
}

function byName(list, key = "name") {
  const map = new Map();
  for (const o of list || []) map.set(o[key], o);
  return map;
}

function drawVservers(config, stats) {
  const s = byName(stats);
  fill("vservers", config, (row, v) => {
    const st = s.get(v.name) || {};
    row.dataset.vserver = v.name;
    cell(row, v.name);
    cell(row, v.ipv46 + ":" + v.port);
    cell(row, v.lbmethod || "");
    stateCell(row, st.state || v.curstate || "DOWN");
    cell(row, (st.vslbhealth || "0") + " %", "num");
    cell(row, human(st.hitsrate), "num");
    cell(row, human(st.pktsrecvdrate), "num");
    cell(row, human(st.requestbytesrate), "num");
    cell(row, human(st.curclntconnections), "num");
  });
}

// The vservers each service (or group) is bound to: name → [vserver, binding weight].
function boundTo(bindings, key) {
  const map = new Map();
  for (const b of bindings || []) {
    const list = map.get(b[key]) || [];
    list.push([b.name, b.weight]);
    map.set(b[key], list);
  }
  return map;
}

const withWeight = (pairs, weight) =>
  (pairs || []).map(([vserver, w]) => vserver + " (" + (weight ?? w) + ")").join(", ");

// Services, then the members of service groups (their rates are the group member's own
// stat resource; the row shows the member's weight where the group is bound).
function drawServices(stats, bindings, members, groupBindings) {
  const services = boundTo(bindings, "servicename");
  const groups = boundTo(groupBindings, "servicegroupname");
  const rows = (stats || []).map((s) => ({ kind: "service", s }))
    .concat((members || []).map((m) => ({ kind: "member", m })));
  fill("services", rows, (row, item) => {
    if (item.kind === "member") {
      const m = item.m;
      const name = m.servicegroupname + " › " + m.servername + ":" + m.port;
      row.dataset.service = name;
      cell(row, name);
      cell(row, m.ip + ":" + m.port);
      cell(row, withWeight(groups.get(m.servicegroupname), m.weight));
      stateCell(row, m.svrstate);
      for (let i = 0; i < 4; i++) cell(row, "–", "num");
      return;
    }
    const s = item.s;
    row.dataset.service = s.name;
    cell(row, s.name);
    cell(row, s.primaryipaddress + ":" + s.primaryport);
    cell(row, withWeight(services.get(s.name)));
    stateCell(row, s.state);
    const us = Number(s.monitorresponsetimeus);
    cell(row, us ? (us / 1000).toFixed(2) + " ms" : "–", "num");
    cell(row, human(s.vsvrservicehitsrate), "num");
    cell(row, human(s.responsebytesrate), "num");
    cell(row, human(s.curclntconnections), "num");
  });
}

function drawDrops(drops) {
  if (drops.length === 0) drops = [{ reason: "none", frames: 0 }];
  fill("drops", drops, (row, d) => {
    row.dataset.reason = d.reason;
    cell(row, d.reason);
    cell(row, human(d.frames), "num");
  });
}

function plotFor(chart, names) {
  const el = $(chart.id);
  const width = Math.max(300, el.clientWidth || 330);
  el.replaceChildren();
  const series = [{}].concat(names.map((n, i) => ({
    label: n, stroke: COLOURS[i % COLOURS.length], width: 1.5,
  })));
  return new uPlot({
    width, height: 160, series,
    scales: { x: { time: true } },
    axes: [{}, { values: (_, ticks) => ticks.map(human), size: 55 }],
    legend: { live: false },
  }, [[]].concat(names.map(() => [])), el);
}

function drawCharts(stats) {
  const names = (stats || []).map((v) => v.name).sort();
  const s = byName(stats);
  if (names.join("\0") !== history.vservers.join("\0")) {
    history = { times: [], vservers: names, values: {} };
    for (const c of CHARTS) { history.values[c.key] = names.map(() => []); plots[c.key] = plotFor(c, names); }
  }
  history.times.push(Date.now() / 1000);
  for (const c of CHARTS) {
    names.forEach((n, i) => history.values[c.key][i].push(Number((s.get(n) || {})[c.key]) || 0));
  }
  if (history.times.length > KEPT) {
    history.times.shift();
    for (const c of CHARTS) for (const v of history.values[c.key]) v.shift();
  }
  for (const c of CHARTS) plots[c.key].setData([history.times].concat(history.values[c.key]));
}

async function poll() {
  const paths = ["/config/lbvserver", "/config/lbvserver_service_binding", "/stat/lbvserver",
    "/stat/service", "/stat/ns", "/stat/nsdropreason",
    "/config/servicegroup_servicegroupmember_binding", "/config/lbvserver_servicegroup_binding"];
  let replies;
  try {
    replies = await Promise.all(paths.map((p) => nitro(p)));
  } catch (e) {
    $("updated").textContent = "Cannot reach the appliance: " + e;
    return;
  }
  if (replies.some((r) => r.status === 401)) { loggedOut("The session ended; log in again."); return; }
  const [vsConfig, bindings, vsStats, svcStats, ns, drops, members, groupBindings] =
    replies.map((r) => r.body);
  drawVservers(vsConfig.lbvserver || [], vsStats.lbvserver || []);
  drawServices(svcStats.service || [], bindings.lbvserver_service_binding || [],
    members.servicegroup_servicegroupmember_binding || [],
    groupBindings.lbvserver_servicegroup_binding || []);
  drawDrops(drops.nsdropreason || []);
  drawCharts(vsStats.lbvserver || []);
  const n = ns.ns || {};
  $("summary").textContent = (vsConfig.lbvserver || []).length + " vservers, " +
    (svcStats.service || []).filter((s) => s.state === "UP").length + "/" +
    (svcStats.service || []).length + " services UP, " + human(n.flows) + " flows";
  $("updated").textContent = "Updated " + new Date().toLocaleTimeString();
}

function start() {
  show(true);
  poll();
  if (!timer) timer = setInterval(poll, POLL_MS);
}

$("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("login-error").textContent = "";
  const reply = await nitro("/config/login", {
    method: "POST",
    body: JSON.stringify({ login: { username: $("username").value, password: $("password").value } }),
  });
  $("password").value = "";
  if (reply.status === 201) start();
  else $("login-error").textContent = reply.body.message || ("HTTP " + reply.status);
});

$("logout").addEventListener("click", async () => {
  await nitro("/config/logout", { method: "POST", body: JSON.stringify({ logout: {} }) });
  loggedOut("Logged out.");
});

// A session cookie from an earlier visit may still be good.
nitro("/stat/ns").then((r) => (r.status === 200 ? start() : loggedOut("")));
