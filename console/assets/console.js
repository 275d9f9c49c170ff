// rcpd console. Plain browser JavaScript, no build step, no dependencies.
// Everything shown comes from the RCP endpoint (body[data-rcp-base]) or the
// console API (/console/api/); server data is only ever inserted as text
// (never as HTML), since hits carry untrusted corpus content.
"use strict";

(() => {
  const base = document.body.dataset.rcpBase || "/rcp";
  const $ = (id) => document.getElementById(id);
  const state = {
    token: "",          // bearer token, memory only
    info: null,         // info result: server, capabilities, _meta
    caps: {},
    lastParams: null,   // params of the search on screen (for pagination)
    rank: 0,            // hits shown so far
    listCursor: "",
    seq: 0,
  };

  // ---------- DOM helpers ----------
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const kid of kids.flat()) {
      if (kid === undefined || kid === null || kid === false) continue;
      e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return e;
  }
  const clear = (e) => { while (e.firstChild) e.removeChild(e.firstChild); return e; };
  // humanBytes is "512 B", "35.8 KiB", "1.2 MiB" (binary units, like rcp index list).
  function humanBytes(n) {
    if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB";
    if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + " KiB";
    return n + " B";
  }
  const fmt = (x, d = 3) => (typeof x === "number" && isFinite(x)) ? (Math.abs(x) >= 1000 ? x.toFixed(0) : x.toFixed(d)) : String(x);
  function show(box, msg) { if (msg) { box.textContent = msg; box.hidden = false; } else { box.textContent = ""; box.hidden = true; } }

  // ---------- raw log ----------
  function shellQuote(s) { return "'" + String(s).replace(/'/g, "'\\''") + "'"; }
  function asCurl(method, body, stream) {
    const url = location.origin + base + "/" + method;
    const parts = ["curl -sS", shellQuote(url), "-H 'Content-Type: application/json'"];
    if (stream) parts.push("-H 'Accept: text/event-stream' -N");
    if (state.token) parts.push("-H \"Authorization: Bearer $RCP_TOKEN\"");
    parts.push("--data " + shellQuote(JSON.stringify(body)));
    return parts.join(" ");
  }
  // asRCP renders the request with the rcp CLI; options the CLI has no flag
  // for are listed in a trailing comment rather than silently dropped.
  function asRCP(method, p) {
    const target = "--http " + shellQuote(location.origin + base) + (state.token ? " --token \"$RCP_TOKEN\"" : "");
    if (method === "info" || method === "initialize") return "rcp info --json " + target;
    if (method === "ping") return "rcp ping " + target;
    if (method === "index/delete") return "rcp index delete " + target + " " + (p.ids || []).map(shellQuote).join(" ");
    if (method !== "retrieve") return "# no rcp command for " + method + "; use the curl form";
    const a = ["rcp query", shellQuote(typeof p.query === "string" ? p.query : JSON.stringify(p.query)), "--json"];
    const lost = [];
    for (const [k, v] of Object.entries(p)) {
      switch (k) {
        case "query": case "_meta": case "includeText": break;
        case "k": a.push("--k " + v); break;
        case "mode": a.push("--mode " + v); break;
        case "unit": a.push("--unit " + v); break;
        case "candidateK": a.push("--candidate-k " + v); break;
        case "tokenBudget": a.push("--token-budget " + v); break;
        case "minScore": a.push("--min-score " + v); break;
        case "filter": a.push("--filter-json " + shellQuote(JSON.stringify(v))); break;
        case "mmr": a.push("--mmr " + v.lambda); break;
        case "rerank":
          if (v && v.method) a.push("--rerank " + v.method);
          if (v && v.topN !== undefined) lost.push("rerank.topN");
          if (v === false) lost.push("rerank:false");
          break;
        case "fusion":
          if (v.method) a.push("--fusion " + v.method);
          for (const f of Object.keys(v)) if (f !== "method") lost.push("fusion." + f);
          break;
        default: lost.push(k);
      }
    }
    a.push(target);
    return a.join(" ") + (lost.length ? "  # not expressible with rcp query: " + lost.join(", ") : "");
  }
  async function copy(text, what) {
    try { await navigator.clipboard.writeText(text); $("copy-status").textContent = what + " copied"; }
    catch (e) {
      // clipboard needs a secure context or permission: leave the text selectable instead
      $("copy-status").textContent = what + ": " + text;
    }
  }
  function logExchange(method, body, stream, answer, ms, httpStatus) {
    const params = body.params || {};
    const li = el("li", { class: "raw" },
      el("div", { class: "row" },
        el("strong", { text: method }), el("span", { class: "usage", text: `HTTP ${httpStatus} · ${fmt(ms, 1)} ms` + (stream ? " · SSE" : "") }),
        el("button", { type: "button", class: "secondary", onclick: () => copy(asCurl(method, body, stream), "curl command") }, "Copy as curl"),
        el("button", { type: "button", class: "secondary", onclick: () => copy(asRCP(method, params), "rcp command") }, "Copy as rcp")),
      el("details", {}, el("summary", {}, "Request"), el("pre", { class: "raw-request", text: JSON.stringify(body, null, 2) })),
      el("details", {}, el("summary", {}, "As commands"), el("pre", { class: "as-curl", text: asCurl(method, body, stream) }), el("pre", { class: "as-rcp", text: asRCP(method, params) })),
      el("details", { open: answer && answer.error ? true : undefined }, el("summary", {}, "Response"), el("pre", { class: "raw-response", text: JSON.stringify(answer, null, 2) })));
    $("raw-log").prepend(li);
    while ($("raw-log").children.length > 100) $("raw-log").lastChild.remove();
  }

  // ---------- RCP over HTTP ----------
  class RCPError extends Error {
    constructor(err, http) {
      super(err.message || "error");
      this.code = err.code; this.data = err.data; this.http = http;
    }
  }
  function authHeaders(h) {
    if (state.token) h.Authorization = "Bearer " + state.token;
    return h;
  }
  // readSSE parses an event stream, calling onData with each data payload.
  async function readSSE(resp, onData) {
    const reader = resp.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (value) buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const frame = buf.slice(0, i); buf = buf.slice(i + 2);
        const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
        if (data) onData(JSON.parse(data));
      }
      if (done) break;
    }
  }
  // call sends one JSON-RPC request. With opts.onProgress and streaming
  // advertised it asks for SSE and reports notifications/progress frames.
  async function call(method, params, opts = {}) {
    const id = ++state.seq;
    const body = { jsonrpc: "2.0", id, method, params: params || {} };
    const stream = !!(opts.onProgress && state.caps.streaming);
    if (stream) body.params = Object.assign({}, body.params, { _meta: Object.assign({}, body.params._meta, { progressToken: "console-" + id }) });
    const headers = authHeaders({ "Content-Type": "application/json", Accept: stream ? "text/event-stream, application/json" : "application/json" });
    const t0 = performance.now();
    let resp;
    try {
      resp = await fetch(base + "/" + method, { method: "POST", headers, body: JSON.stringify(body), credentials: "omit", cache: "no-store" });
    } catch (e) {
      throw new RCPError({ code: 0, message: "network error: " + e.message }, 0);
    }
    if (resp.status === 401 && !opts.retried) {
      await resp.text();
      if (await askToken()) return call(method, params, Object.assign({}, opts, { retried: true }));
    }
    let answer = null;
    const ctype = resp.headers.get("Content-Type") || "";
    if (ctype.startsWith("text/event-stream")) {
      await readSSE(resp, (msg) => {
        if (msg.method === "notifications/progress") { if (msg.params && msg.params.progressToken === "console-" + id) opts.onProgress(msg.params); }
        else if (msg.id === id || msg.result || msg.error) answer = msg;
      });
    } else {
      const text = await resp.text();
      try { answer = JSON.parse(text); } catch (e) { answer = { error: { code: 0, message: `HTTP ${resp.status}: ${text.slice(0, 200)}` } }; }
    }
    logExchange(method, body, stream, answer, performance.now() - t0, resp.status);
    if (!answer) throw new RCPError({ code: 0, message: "the stream ended without a response" }, resp.status);
    if (answer.error) throw new RCPError(answer.error, resp.status);
    return answer.result;
  }
  function errorText(e) {
    if (!(e instanceof RCPError)) return String(e && e.message || e);
    let s = (e.code ? `${e.code} ` : "") + e.message;
    const names = { "-32005": "OptionUnsupported", "-32602": "InvalidParams", "-32003": "CapabilityNotAdvertised", "-32012": "Unauthorized", "-32011": "RateLimited", "-32010": "BackendUnavailable" };
    if (names[e.code]) s = `${e.code} ${names[e.code]}: ${e.message}`;
    if (e.data) {
      const d = [];
      for (const k of ["field", "option", "detail"]) if (e.data[k] !== undefined) d.push(`${k}: ${typeof e.data[k] === "string" ? e.data[k] : JSON.stringify(e.data[k])}`);
      if (d.length) s += "\n" + d.join("\n");
    }
    return s;
  }
  function renderError(box, e) {
    clear(box);
    box.hidden = false;
    const code = e instanceof RCPError && e.code ? String(e.code) : "";
    box.dataset.code = code;
    box.append(el("strong", {}, code ? "Error " : "Error"), document.createTextNode(errorText(e)));
  }

  // ---------- token ----------
  let tokenWaiters = [];
  function askToken() {
    return new Promise((resolve) => {
      tokenWaiters.push(resolve);
      const d = $("token-dialog");
      if (!d.open) { d.showModal(); $("token-input").focus(); }
    });
  }
  function settleToken(ok) {
    const ws = tokenWaiters; tokenWaiters = [];
    ws.forEach((r) => r(ok));
  }
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    state.token = $("token-input").value.trim();
    $("token-input").value = "";
    $("token-dialog").close();
    settleToken(!!state.token);
  });
  $("token-cancel").addEventListener("click", () => { $("token-dialog").close(); settleToken(false); });
  $("token-dialog").addEventListener("cancel", () => settleToken(false));
  $("token-button").addEventListener("click", async () => { if (await askToken()) loadInfo(); });

  // ---------- tabs ----------
  const tabs = Array.from(document.querySelectorAll("[role=tab]"));
  function selectTab(tab, focus) {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute("aria-selected", on ? "true" : "false");
      t.tabIndex = on ? 0 : -1;
      $(t.getAttribute("aria-controls")).hidden = !on;
    }
    if (focus) tab.focus();
  }
  const tabByName = (n) => $("tab-" + n);
  const currentTab = () => tabs.find((t) => t.getAttribute("aria-selected") === "true").id.slice(4);
  for (const t of tabs) {
    t.addEventListener("click", () => { selectTab(t); if (t.id === "tab-index") listDocs(true); syncURL(); });
    t.addEventListener("keydown", (ev) => {
      const i = tabs.indexOf(t);
      let j = -1;
      if (ev.key === "ArrowRight") j = (i + 1) % tabs.length;
      else if (ev.key === "ArrowLeft") j = (i - 1 + tabs.length) % tabs.length;
      else if (ev.key === "Home") j = 0;
      else if (ev.key === "End") j = tabs.length - 1;
      if (j >= 0) { ev.preventDefault(); selectTab(tabs[j], true); syncURL(); }
    });
  }

  // ---------- capabilities ----------
  // Operators §8 allows per field type (before the server's own list).
  const opsByType = {
    keyword: ["eq", "ne", "in", "nin", "exists", "contains"],
    text: ["eq", "ne", "in", "nin", "contains", "exists"],
    int: ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "exists"],
    float: ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "exists"],
    date: ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "exists"],
    bool: ["eq", "ne", "exists"],
    geo: ["exists"],
  };
  function filterFields() {
    const f = state.caps.filter;
    if (!f) return {};
    if (Array.isArray(f.fields)) return Object.fromEntries(f.fields.map((n) => [n, "keyword"]));
    return f.fields || {};
  }
  function fieldOps(type) {
    const adv = (state.caps.filter && state.caps.filter.operators) || ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "exists"];
    return (opsByType[type] || opsByType.keyword).filter((o) => adv.includes(o));
  }
  function fillSelect(sel, values, { empty, current, unadvertised } = {}) {
    clear(sel);
    if (empty) sel.append(el("option", { value: "" }, empty));
    for (const v of values) sel.append(el("option", { value: v }, v));
    if (current && !values.includes(current)) sel.append(el("option", { value: current }, current + (unadvertised ? " (not advertised)" : "")));
    if (current !== undefined) sel.value = current;
  }
  async function loadInfo() {
    try {
      const info = await call("info", {});
      state.info = info;
      state.caps = info.capabilities || {};
      const conf = info._meta && info._meta.conformance;
      $("identity").textContent = `${info.server.name} ${info.server.version} · RCP/${info.protocolVersion}` + (conf ? ` · conformance ${conf}` : "");
      applyCaps();
      renderCaps();
      return true;
    } catch (e) {
      $("identity").textContent = "not connected";
      renderError($("alert"), e);
      return false;
    }
  }
  function applyCaps() {
    const c = state.caps, r = c.retrieve || {};
    for (const n of document.querySelectorAll("[data-cap]")) {
      const key = n.dataset.cap;
      const on = key === "units" ? !!r.units : key === "levels" ? !!r.levels : key === "tokenBudget" ? !!r.tokenBudget :
        key === "fusion" ? !!(r.fusion && r.fusion.length) : key === "mmr" ? !!r.mmr : key === "filter" ? !!c.filter :
        key === "streaming" ? !!c.streaming : key === "chunking" ? !!(c.index && c.index.chunking) :
        key === "transform" ? !!(c.transform && (c.transform.methods || []).length) : key === "session" ? !!c.session : true;
      n.hidden = !on;
    }
    const modes = r.modes || [];
    const dflt = r.defaultMode ? `server default (${r.defaultMode})` : "server default";
    fillSelect($("opt-mode"), modes, { empty: dflt, current: $("opt-mode").value });
    fillSelect($("cmp-a-mode"), modes, { empty: dflt, current: $("cmp-a-mode").value || (modes.includes("sparse") ? "sparse" : "") });
    fillSelect($("cmp-b-mode"), modes, { empty: dflt, current: $("cmp-b-mode").value || (modes.includes("hybrid") ? "hybrid" : "") });
    fillSelect($("opt-unit"), r.units || [], { empty: "default", current: $("opt-unit").value });
    fillSelect($("opt-fusion"), r.fusion || [], { empty: "default", current: $("opt-fusion").value });
    const rerankMethods = (c.rerank && c.rerank.methods) || [];
    fillSelect($("opt-rerank"), r.rerankBuiltin || c.rerank ? rerankMethods : [], { empty: "default", current: $("opt-rerank").value, unadvertised: true });
    fillSelect($("opt-rewrite"), (c.transform && c.transform.methods) || [], { empty: "none", current: $("opt-rewrite").value, unadvertised: true });
    if (!$("opt-rerank").querySelector("option[value=off]")) $("opt-rerank").append(el("option", { value: "off" }, "off (rerank: false)"));
    if (r.maxK) $("opt-k").max = r.maxK;
    const writable = !!(c.index && c.index.writable);
    $("index-readonly").hidden = writable;
    $("paste-button").disabled = !writable;
    $("upload-button").disabled = !writable;
    if (r.levels) $("opt-level").max = r.levels - 1;
    for (const row of $("filter-rows").children) row.refresh();
  }
  function dl(obj) {
    const d = el("dl");
    for (const [k, v] of Object.entries(obj)) {
      d.append(el("dt", {}, k), el("dd", {}, Array.isArray(v) ? v.join(", ") : typeof v === "object" && v !== null ? JSON.stringify(v) : String(v)));
    }
    return d;
  }
  function renderCaps() {
    const box = clear($("caps")), info = state.info, c = state.caps;
    box.append(el("section", { class: "card", "aria-labelledby": "caps-server" }, el("h2", { id: "caps-server" }, "Server"),
      dl({ name: info.server.name, version: info.server.version, protocol: "RCP/" + info.protocolVersion, conformance: (info._meta && info._meta.conformance) || "not stated" })));
    renderReadiness(box);
    // a gateway's engines and their health come first: they are what it serves
    if (c.catalog) renderCatalog(box);
    const grid = el("div", { class: "caps" });
    for (const [k, v] of Object.entries(c)) {
      if (k === "filter") continue;
      const body = v && typeof v === "object" && Object.keys(v).length ? dl(v) : el("p", { class: "hint" }, "supported");
      grid.append(el("section", { class: "card", "aria-label": "capability " + k }, el("h3", {}, k), body));
    }
    box.append(el("h2", {}, "Capabilities"), grid);
    if (c.filter) {
      const fields = filterFields();
      const tb = el("tbody");
      for (const [n, t] of Object.entries(fields)) tb.append(el("tr", {}, el("td", {}, el("code", {}, n)), el("td", {}, t), el("td", {}, fieldOps(t).join(", "))));
      box.append(el("h2", {}, "Filter fields"), el("table", {}, el("caption", { class: "visually-hidden" }, "Filter fields"),
        el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Field"), el("th", { scope: "col" }, "Type"), el("th", { scope: "col" }, "Operators"))), tb));
    }
  }
  // The derived structures the server builds in the background (rcpd's
  // info _meta "x-rcpgo/readiness"): state, progress and why; refreshed
  // every 2 s while one is building or stale.
  let readinessTimer = null;
  function readinessOf(info) { return (info && info._meta && info._meta["x-rcpgo/readiness"]) || null; }
  function renderReadiness(box) {
    const r = readinessOf(state.info);
    if (!r) return;
    const sec = el("section", { id: "readiness", "aria-live": "polite" }, el("h2", {}, "Derived structures"));
    const tb = el("tbody");
    let settled = true;
    for (const name of Object.keys(r).sort()) {
      const s = r[name];
      if (s.state === "building" || s.state === "stale") settled = false;
      let prog = s.phase || "";
      if (s.total) prog += ` ${s.done || 0}/${s.total} ${s.unit || ""} (${Math.floor(100 * (s.done || 0) / s.total)}%)`;
      if (s.etaMs) prog += ` · ${Math.ceil(s.etaMs / 1000)} s left`;
      tb.append(el("tr", {}, el("td", {}, el("code", {}, name)), el("td", {}, el("span", { class: "health " + (s.state === "ready" ? "up" : s.state === "waiting" ? "down" : "busy") }, s.state)),
        el("td", {}, prog.trim()), el("td", {}, s.detail || "")));
    }
    sec.append(el("table", {}, el("caption", { class: "visually-hidden" }, "Derived structures"),
      el("thead", {}, el("tr", {}, ...["Structure", "State", "Progress", "Detail"].map((h) => el("th", { scope: "col" }, h)))), tb));
    const old = $("readiness");
    if (old) old.replaceWith(sec); else box.append(sec);
    clearTimeout(readinessTimer);
    if (!settled) readinessTimer = setTimeout(refreshReadiness, 2000);
  }
  async function refreshReadiness() {
    try {
      const info = await call("info", {});
      state.info._meta = info._meta;
      renderReadiness($("caps"));
    } catch (e) { /* the next loadInfo reports it */ }
  }
  async function renderCatalog(box) {
    const sec = el("section", {}, el("h2", {}, "Engines (catalog/list)"));
    box.append(sec);
    try {
      const res = await call("catalog/list", {});
      const tb = el("tbody");
      for (const e of res.engines) {
        const r = (e.capabilities && e.capabilities.retrieve) || {};
        tb.append(el("tr", {}, el("td", {}, el("code", {}, e.id)), el("td", {}, `${e.server.name} ${e.server.version}`),
          el("td", {}, el("span", { class: "health up" }, "reachable")), el("td", {}, (e._meta && e._meta.conformance) || ""),
          el("td", {}, (r.modes || []).join(", ")), el("td", {}, e.endpoint ? e.endpoint.url || e.endpoint.transport : "hidden")));
      }
      for (const id of (res._meta && res._meta.unavailable) || []) {
        tb.append(el("tr", {}, el("td", {}, el("code", {}, id)), el("td", {}, "—"), el("td", {}, el("span", { class: "health down" }, "unavailable")), el("td"), el("td"), el("td")));
      }
      sec.append(el("table", {}, el("caption", { class: "visually-hidden" }, "Federated engines"),
        el("thead", {}, el("tr", {}, ...["Engine", "Server", "Health", "Conformance", "Modes", "Endpoint"].map((h) => el("th", { scope: "col" }, h)))), tb));
    } catch (e) {
      const b = el("div", { class: "error", role: "alert" }); sec.append(b); renderError(b, e);
    }
  }

  // ---------- filters ----------
  function addFilterRow(init) {
    const fields = filterFields();
    const names = Object.keys(fields);
    const n = $("filter-rows").children.length + 1;
    const field = el("select", { "aria-label": `Condition ${n} field` });
    const op = el("select", { "aria-label": `Condition ${n} operator` });
    const value = el("input", { type: "text", "aria-label": `Condition ${n} value`, placeholder: "value (in/nin: a,b,c)" });
    const li = el("li", {}, field, op, value, el("button", { type: "button", class: "secondary", "aria-label": `Remove condition ${n}`, onclick: () => li.remove() }, "Remove"));
    li.refresh = () => {
      const cur = field.value || (init && init.field);
      fillSelect(field, Object.keys(filterFields()), { current: cur || names[0] });
      const curOp = op.value || (init && init.op);
      fillSelect(op, fieldOps(filterFields()[field.value]), { current: curOp || "eq" });
      value.hidden = op.value === "exists";
    };
    field.addEventListener("change", () => { op.value = ""; li.refresh(); });
    op.addEventListener("change", () => li.refresh());
    li.condition = () => {
      const t = filterFields()[field.value];
      const conv = (s) => (t === "int" || t === "float") && s.trim() !== "" && !isNaN(Number(s)) ? Number(s) : t === "bool" ? s === "true" : s;
      if (op.value === "exists") return { field: field.value, op: "exists", value: value.value !== "false" };
      if (op.value === "in" || op.value === "nin") return { field: field.value, op: op.value, value: value.value.split(",").map((s) => conv(s.trim())).filter((s) => s !== "") };
      return { field: field.value, op: op.value, value: conv(value.value) };
    };
    li.refresh();
    if (init) {
      if (init.value !== undefined) value.value = Array.isArray(init.value) ? init.value.join(",") : String(init.value);
    }
    $("filter-rows").append(li);
    return li;
  }
  $("filter-add").addEventListener("click", () => addFilterRow().querySelector("input").focus());
  function filterTree() {
    const conds = Array.from($("filter-rows").children).map((li) => li.condition());
    if (!conds.length) return undefined;
    if (conds.length === 1) return conds[0];
    return { [$("filter-join").value]: conds };
  }
  // setFilterTree restores the rows from a deep link (one flat and/or level).
  function setFilterTree(tree) {
    clear($("filter-rows"));
    if (!tree) return;
    const list = tree.and || tree.or || [tree];
    $("filter-join").value = tree.or ? "or" : "and";
    for (const c of list) addFilterRow(c);
  }

  // ---------- search params ----------
  const num = (id) => { const v = $(id).value.trim(); return v === "" ? undefined : Number(v); };
  function parseJSONField(id, what) {
    const s = $(id).value.trim();
    if (!s) return {};
    let v;
    try { v = JSON.parse(s); } catch (e) { throw new Error(`${what}: not valid JSON (${e.message})`); }
    if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error(`${what}: want a JSON object`);
    return v;
  }
  function buildParams() {
    const p = { query: $("q").value };
    const set = (k, v) => { if (v !== undefined && v !== "" && !(typeof v === "number" && isNaN(v))) p[k] = v; };
    set("k", num("opt-k"));
    set("mode", $("opt-mode").value);
    set("candidateK", num("opt-candidateK"));
    if (!$("opt-unit").closest("[data-cap]").hidden) set("unit", $("opt-unit").value);
    if (!$("opt-level").closest("[data-cap]").hidden) set("level", num("opt-level"));
    if (!$("opt-tokenBudget").closest("[data-cap]").hidden) set("tokenBudget", num("opt-tokenBudget"));
    set("minScore", num("opt-minScore"));
    const fusion = {};
    if ($("opt-fusion").value) fusion.method = $("opt-fusion").value;
    if (num("opt-alpha") !== undefined) fusion.alpha = num("opt-alpha");
    if (num("opt-rrfK") !== undefined) fusion.rrfK = num("opt-rrfK");
    const w = {};
    if (num("opt-wd") !== undefined) w.dense = num("opt-wd");
    if (num("opt-ws") !== undefined) w.sparse = num("opt-ws");
    if (Object.keys(w).length) fusion.weights = w;
    if (Object.keys(fusion).length) p.fusion = fusion;
    const rr = $("opt-rerank").value;
    if (rr === "off") p.rerank = false;
    else if (rr) { p.rerank = { method: rr }; if (num("opt-topN") !== undefined) p.rerank.topN = num("opt-topN"); }
    if (num("opt-mmr") !== undefined) p.mmr = { lambda: num("opt-mmr") };
    if (!$("opt-rewrite").closest("[data-cap]").hidden) set("rewrite", $("opt-rewrite").value);
    if (!$("opt-sessionId").closest("[data-cap]").hidden) set("sessionId", $("opt-sessionId").value.trim());
    const f = filterTree();
    if (f) p.filter = f;
    if (!$("opt-strict").checked) p.strict = false;
    if (!$("opt-includeText").checked) p.includeText = false;
    return Object.assign(p, parseJSONField("opt-extra", "Extra params"));
  }

  // ---------- deep links ----------
  const urlFields = [["q", "q"], ["mode", "opt-mode"], ["k", "opt-k"], ["candidateK", "opt-candidateK"], ["unit", "opt-unit"],
    ["level", "opt-level"], ["tokenBudget", "opt-tokenBudget"], ["minScore", "opt-minScore"], ["fusion", "opt-fusion"],
    ["alpha", "opt-alpha"], ["rrfK", "opt-rrfK"], ["wd", "opt-wd"], ["ws", "opt-ws"], ["rerank", "opt-rerank"], ["topN", "opt-topN"],
    ["mmr", "opt-mmr"], ["rewrite", "opt-rewrite"], ["sessionId", "opt-sessionId"], ["extra", "opt-extra"], ["a.mode", "cmp-a-mode"], ["a.opts", "cmp-a-opts"], ["b.mode", "cmp-b-mode"], ["b.opts", "cmp-b-opts"]];
  function syncURL() {
    const u = new URLSearchParams();
    const tab = currentTab();
    if (tab !== "search") u.set("tab", tab);
    for (const [k, id] of urlFields) {
      const v = $(id).value.trim();
      if (v !== "" && !(k === "k" && v === "10")) u.set(k, v);
    }
    const f = filterTree();
    if (f) u.set("filter", JSON.stringify(f));
    if (!$("opt-strict").checked) u.set("strict", "0");
    if (!$("opt-stream").checked) u.set("stream", "0");
    const s = u.toString();
    history.replaceState(null, "", s ? "?" + s : location.pathname);
  }
  function restoreURL() {
    const u = new URLSearchParams(location.search);
    for (const [k, id] of urlFields) {
      if (!u.has(k)) continue;
      const e = $(id), v = u.get(k);
      if (e.tagName === "SELECT" && !Array.from(e.options).some((o) => o.value === v)) e.append(el("option", { value: v }, v + " (not advertised)"));
      e.value = v;
    }
    if (u.has("filter")) { try { setFilterTree(JSON.parse(u.get("filter"))); } catch (e) { renderError($("search-error"), new Error("filter in the link is not valid JSON")); } }
    if (u.get("strict") === "0") $("opt-strict").checked = false;
    if (u.get("stream") === "0") $("opt-stream").checked = false;
    return u;
  }

  // ---------- results ----------
  function queryTerms(q) {
    return (typeof q === "string" ? q : "").toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((t) => t.length > 2);
  }
  // termMatch reports whether a word (lower-cased) is a form of a query
  // term: equal, or sharing its first five letters (a stand-in for the
  // server's stemmer, as rcp query's highlighting does): "converting" for
  // "convert", "bytes" for "byte".
  function termMatch(word, terms) {
    for (const t of terms) {
      if (word === t) return true;
      const n = Math.min(t.length, 5);
      if (t.length >= 4 && word.length >= n && word.slice(0, n) === t.slice(0, n)) return true;
    }
    return false;
  }
  // highlight renders text with the words that match query terms marked,
  // whole words only (as text nodes only).
  function highlight(text, terms) {
    const frag = document.createDocumentFragment();
    if (!terms.length) { frag.append(text); return frag; }
    let last = 0;
    for (const m of text.matchAll(/[\p{L}\p{N}]+/gu)) {
      if (!termMatch(m[0].toLowerCase(), terms)) continue;
      if (m.index > last) frag.append(text.slice(last, m.index));
      frag.append(el("mark", {}, m[0]));
      last = m.index + m[0].length;
    }
    frag.append(text.slice(last));
    return frag;
  }
  const stageNames = ["dense", "sparse", "fused", "rerank"];
  // scoreMax is each stage's largest score over the hits on screen, so a
  // bar shows a hit's share of the best score of that stage.
  function scoreMax(hits) {
    const m = {};
    for (const h of hits) for (const [k, v] of Object.entries(h.scores || {})) m[k] = Math.max(m[k] || 0, Math.abs(v));
    return m;
  }
  function bar(cls, label, value, max) {
    const pct = max > 0 ? Math.max(0, Math.min(100, Math.abs(value) / max * 100)) : 0;
    const fill = el("span");
    fill.style.width = pct.toFixed(1) + "%"; // CSSOM, which the CSP allows (style attributes it does not)
    return [el("span", {}, label), el("span", { class: "bar " + cls, role: "meter", "aria-label": `${label} score`, "aria-valuemin": "0", "aria-valuemax": String(fmt(max)), "aria-valuenow": String(fmt(value)) }, fill), el("span", { class: "num" }, fmt(value))];
  }
  function hitTitle(h) { return (h.citation && h.citation.title) || (h.meta && h.meta.title) || String(h.id); }
  // trustBadge says what a hit's trust means to the person reading it
  // (README, "Trust badges"): a source the operator declared trusted or
  // community; content written with index/add, which rcpd reports as
  // untrusted because it cannot vouch for it, labelled by where it came
  // from (a local file, an upload, the web) and shown as neutral; and, in
  // red, content the injection screen flagged or clients reported
  // (trust.score 0: quarantined by feedback).
  function trustBadge(h) {
    const t = h.trust, score = t.score ?? "n/a";
    if (t.injectionSuspected || t.score === 0) {
      const what = t.score === 0 ? "reported" : "suspicious";
      return el("span", { class: "badge suspicious", title: (t.score === 0 ? "reported by clients (feedback) and quarantined" :
        "the injection screen flagged this text") + ` · trust ${t.level}, score ${score}` }, "⚠ " + what);
    }
    if (t.level === "trusted" || t.level === "community") {
      return el("span", { class: "badge " + t.level, title: `a source the operator declared ${t.level} (rcpd trustedSources) · score ${score}` }, t.level);
    }
    const uri = (h.citation && h.citation.uri) || (h.meta && (h.meta.source || h.meta.uri)) || "";
    const origin = /^file:/.test(uri) || (h.meta && h.meta.path) ? "local file" : h.meta && h.meta.filename ? "uploaded" : /^https?:/.test(uri) ? "web" : "not vetted";
    return el("span", { class: "badge unvetted", title: "written with index/add: rcpd does not vouch for what clients write, so it reports it untrusted; " +
      `nothing suspicious was found · score ${score}` }, origin);
  }
  function renderHit(h, rank, max, terms, extra, fbParams) {
    const li = el("li", { class: "hit", "data-id": String(h.id) });
    const head = el("div", { class: "hit-head" }, el("span", { class: "rank" }, "#" + rank), extra || null, el("h3", {}, hitTitle(h)),
      el("code", {}, String(h.id)), el("span", { class: "usage" }, "score " + fmt(h.score, 4)));
    if (h.unit) head.append(el("span", { class: "badge" }, h.unit + (h.level !== undefined ? " L" + h.level : "")));
    if (h.trust) {
      head.append(trustBadge(h));
      if (h.trust.sanitized) head.append(el("span", { class: "badge" }, "sanitized"));
    }
    li.append(head);
    if (h.trust && h.trust.injectionSuspected) li.append(el("p", { class: "warn", role: "note" }, "⚠ Possible prompt injection in this text: treat it as data, not as instructions."));
    const scores = el("div", { class: "scores" });
    if (typeof h.confidence === "number") scores.append(...bar("confidence", "confidence", h.confidence, 1));
    for (const s of stageNames) if (h.scores && typeof h.scores[s] === "number") scores.append(...bar(s, s, h.scores[s], max[s]));
    for (const [s, v] of Object.entries(h.scores || {})) if (!stageNames.includes(s) && typeof v === "number") scores.append(...bar("fused", s, v, max[s]));
    if (scores.childNodes.length) li.append(scores);
    if (typeof h.text === "string") li.append(el("p", { class: "hit-text" }, highlight(h.text, terms)));
    if (h.citation) {
      const c = h.citation;
      const span = c.start !== undefined ? ` · chars ${c.start}–${c.end}` : "";
      const line = el("p", { class: "cite-line" }, "Cited from ", el("strong", {}, c.source || "source"), c.uri ? [" · ", el("code", {}, c.uri)] : null, span, c.page !== undefined ? ` · page ${c.page}` : "");
      const docId = h.chunk ? h.chunk.docId : h.id;
      const rc = state.caps["x-rcpgo"];
      if (c.start !== undefined && rc && (rc.methods || []).includes("x-rcpgo/get")) {
        line.append(" ", el("button", { type: "button", class: "secondary", onclick: () => showCitation(String(docId), c) }, "Show cited span"));
      }
      li.append(line);
    }
    if (h.chunk) li.append(el("p", { class: "meta" }, `chunk ${h.chunk.index} of `, el("code", {}, String(h.chunk.docId)), h.chunk.context ? " · context: " + h.chunk.context : ""));
    if (h.provenance) {
      const p = h.provenance, parts = [];
      if (p.path) parts.push("path: " + p.path.join(" → "));
      if (p.nodes) parts.push("nodes: " + p.nodes.join(", "));
      if (p.edges) parts.push("edges: " + p.edges.map((e) => e.src + "→" + e.dst).join(", "));
      if (p.leaves) parts.push("leaves: " + p.leaves.join(", "));
      li.append(el("p", { class: "prov" }, el("strong", {}, "Provenance "), parts.join(" · ")));
    }
    if (h.meta && Object.keys(h.meta).length) {
      li.append(el("p", { class: "meta" }, ...Object.entries(h.meta).flatMap(([k, v], i) => [i ? " · " : "", k + ": ", el("code", {}, typeof v === "string" ? v : JSON.stringify(v))])));
    }
    if (state.caps.feedback) li.append(feedbackButtons(h, fbParams));
    return li;
  }
  // feedbackButtons send a §7.16 helpful / not helpful signal for one hit,
  // in the session of the search that returned it (params: the Search
  // tab's last search, or a Compare side's) when it has one.
  function feedbackButtons(h, params) {
    const status = el("span", { class: "usage", "aria-live": "polite" });
    const send = async (helpful) => {
      const p = { signals: [{ hitId: h.id, helpful }] };
      const last = params || state.lastParams || {};
      if (last.sessionId) p.sessionId = last.sessionId;
      if (typeof last.query === "string") p.query = last.query;
      try { const r = await call("feedback", p); status.textContent = r.accepted ? "thanks: recorded" : "not recorded"; }
      catch (e) { status.textContent = errorText(e); }
    };
    const title = hitTitle(h);
    return el("div", { class: "row feedback" },
      el("button", { type: "button", class: "secondary", "aria-label": `Helpful: ${title}`, onclick: () => send(true) }, "Helpful"),
      el("button", { type: "button", class: "secondary", "aria-label": `Not helpful: ${title}`, onclick: () => send(false) }, "Not helpful"), status);
  }
  async function showCitation(docId, c) {
    const body = clear($("doc-body"));
    try {
      const res = await call("x-rcpgo/get", { ids: [docId] });
      const d = res.documents && res.documents[0];
      if (!d) { body.append("document not found"); }
      else {
        $("doc-title").textContent = d.title || d.id;
        const t = d.text, s = Math.max(0, Math.min(c.start, t.length)), e = Math.max(s, Math.min(c.end, t.length));
        body.append(t.slice(0, s), el("mark", { class: "cite" }, t.slice(s, e)), t.slice(e));
      }
    } catch (e) { body.append(errorText(e)); }
    $("doc-dialog").showModal();
    const m = body.querySelector("mark"); if (m) m.scrollIntoView({ block: "center" });
  }
  function renderUsage(res) {
    const u = res.usage || {}, parts = [];
    if (u.candidates !== undefined) parts.push(`${u.candidates} candidates`);
    if (u.reranked !== undefined) parts.push(`${u.reranked} reranked`);
    if (u.latencyMs !== undefined) parts.push(`${fmt(u.latencyMs, 1)} ms`);
    if (u.tokens !== undefined) parts.push(`${u.tokens} tokens`);
    if (res.indexVersion) parts.push("index " + res.indexVersion);
    const box = clear($("search-usage"));
    box.append(`${state.rank} hit${state.rank === 1 ? "" : "s"}` + (parts.length ? " · " + parts.join(" · ") : ""));
    if (res.rewrittenQuery) box.append(el("div", {}, "rewritten query: ", el("q", {}, res.rewrittenQuery)));
    for (const n of u.notes || []) box.append(el("div", { class: "warn" }, "note: " + n));
    if (res.indexVersion) $("index-version").textContent = res.indexVersion;
  }

  // ---------- search ----------
  function progressUI(prefix) {
    const box = $(prefix + "-progress"), barEl = $(prefix + "-progress-bar"), stages = $(prefix + "-stages");
    box.hidden = false; barEl.value = 0; clear(stages);
    return (p) => {
      if (typeof p.progress === "number") barEl.value = p.progress;
      stages.append(el("li", { "data-stage": p.stage || "" }, el("b", {}, p.stage || "progress"), " " + (p.message || "") +
        (p.partial && p.partial.hits ? ` (${p.partial.hits.length} partial hits)` : "")));
      if (prefix === "search" && p.partial && Array.isArray(p.partial.hits)) showProvisional(p.stage, p.partial.hits);
    };
  }
  // showProvisional lists a stage's partial hits (ids and scores) until the
  // final answer replaces them: with a slow reranker, the recall stage's
  // candidates are worth seeing while it runs.
  function showProvisional(stage, hits) {
    const box = clear($("provisional"));
    box.hidden = false;
    box.append(el("p", { class: "hint" }, `Provisional: ${hits.length} ${stage || ""} candidates, before the final ranking`));
    const ol = el("ol", { class: "provisional-list" });
    for (const h of hits.slice(0, 20)) ol.append(el("li", {}, el("code", {}, String(h.id)), " " + fmt(h.score, 3)));
    box.append(ol);
  }
  async function runSearch(params, append) {
    clear($("provisional")).hidden = true;
    show($("search-error"));
    $("search-button").disabled = true;
    const stream = $("opt-stream").checked && !!state.caps.streaming;
    const onProgress = stream ? progressUI("search") : undefined;
    if (!stream) $("search-progress").hidden = true;
    try {
      const res = await call("retrieve", params, { onProgress });
      if (stream) $("search-progress-bar").value = 1;
      clear($("provisional")).hidden = true;
      if (!append) { clear($("hits")); state.rank = 0; }
      state.lastParams = params;
      const max = scoreMax(res.hits);
      const terms = queryTerms(params.query);
      for (const h of res.hits) $("hits").append(renderHit(h, ++state.rank, max, terms));
      renderUsage(res);
      const next = $("next-page");
      next.hidden = !res.nextCursor;
      next.dataset.cursor = res.nextCursor || "";
      if (!res.hits.length && !append) $("hits").append(el("li", { class: "hint" }, "No hits."));
    } catch (e) {
      clear($("provisional")).hidden = true;
      if (!append) { clear($("hits")); clear($("search-usage")); $("next-page").hidden = true; }
      renderError($("search-error"), e);
    } finally {
      $("search-button").disabled = false;
    }
  }
  $("search-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    let params;
    try { params = buildParams(); } catch (e) { renderError($("search-error"), e); return; }
    if (!params.query.trim()) { renderError($("search-error"), new Error("Enter a query.")); $("q").focus(); return; }
    syncURL();
    runSearch(params, false);
  });
  $("next-page").addEventListener("click", () => {
    const p = Object.assign({}, state.lastParams, { cursor: $("next-page").dataset.cursor });
    runSearch(p, true);
  });

  // ---------- compare ----------
  function sideParams(side) {
    const p = buildParams();
    delete p.cursor;
    const mode = $(`cmp-${side}-mode`).value;
    if (mode) p.mode = mode; else delete p.mode;
    return Object.assign(p, parseJSONField(`cmp-${side}-opts`, `Options ${side.toUpperCase()}`));
  }
  function describe(p) {
    const bits = [p.mode || "default mode"];
    if (p.fusion && p.fusion.method) bits.push(p.fusion.method);
    if (p.rerank === false) bits.push("no rerank"); else if (p.rerank) bits.push("rerank " + p.rerank.method);
    if (p.mmr) bits.push("MMR " + p.mmr.lambda);
    return bits.join(" · ");
  }
  $("compare-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    show($("compare-error"));
    let pa, pb;
    try { pa = sideParams("a"); pb = sideParams("b"); } catch (e) { renderError($("compare-error"), e); return; }
    if (!pa.query.trim()) { renderError($("compare-error"), new Error("Enter a query in the Search tab first.")); return; }
    syncURL();
    $("compare-button").disabled = true;
    try {
      const [ra, rb] = await Promise.all([call("retrieve", pa), call("retrieve", pb)]);
      $("cmp-a-title").textContent = "A: " + describe(pa);
      $("cmp-b-title").textContent = "B: " + describe(pb);
      const rankA = new Map(ra.hits.map((h, i) => [String(h.id), i + 1]));
      const rankB = new Map(rb.hits.map((h, i) => [String(h.id), i + 1]));
      const terms = queryTerms(pa.query);
      const fill = (list, hits, other, isB, params) => {
        clear(list);
        const max = scoreMax(hits);
        hits.forEach((h, i) => {
          const o = other.get(String(h.id));
          let mark;
          if (o === undefined) mark = el("span", { class: "delta " + (isB ? "new" : "gone"), title: isB ? "not in A" : "not in B" }, isB ? "new" : "only A");
          else if (!isB) mark = null;
          else if (o === i + 1) mark = el("span", { class: "delta same", title: "same rank in A" }, "=");
          else if (o > i + 1) mark = el("span", { class: "delta up", title: `rank ${o} in A` }, `▲${o - i - 1}`);
          else mark = el("span", { class: "delta down", title: `rank ${o} in A` }, `▼${i + 1 - o}`);
          const li = renderHit(h, i + 1, max, terms, mark, params);
          li.querySelector(".hit-text") && li.querySelector(".hit-text").remove();
          list.append(li);
        });
      };
      fill($("cmp-a-hits"), ra.hits, rankB, false, pa);
      fill($("cmp-b-hits"), rb.hits, rankA, true, pb);
      const overlap = ra.hits.filter((h) => rankB.has(String(h.id))).length;
      const moved = rb.hits.filter((h, i) => rankA.has(String(h.id)) && rankA.get(String(h.id)) !== i + 1).length;
      $("compare-summary").textContent = `${overlap} of ${Math.max(ra.hits.length, rb.hits.length)} hits in both · ${moved} moved · ${rb.hits.length - overlap} new in B`;
    } catch (e) {
      renderError($("compare-error"), e);
    } finally {
      $("compare-button").disabled = false;
    }
  });

  // ---------- index ----------
  function hasVendor(m) { const v = state.caps["x-rcpgo"]; return !!(v && (v.methods || []).includes(m)); }
  async function listDocs(reset) {
    if (!state.info) return;
    const rows = $("doc-rows");
    if (!hasVendor("x-rcpgo/list")) { clear(rows).append(el("tr", {}, el("td", { colspan: "4" }, "This server does not list documents (no x-rcpgo/list)."))); return; }
    if (reset) {
      clear(rows); state.listCursor = "";
      // x-rcpgo/get with no ids answers just the index version read
      if (hasVendor("x-rcpgo/get")) call("x-rcpgo/get", { ids: [] }).then((r) => { if (r.indexVersion) $("index-version").textContent = r.indexVersion; }, () => {});
    }
    try {
      const p = { limit: 50 };
      if ($("list-prefix").value) p.prefix = $("list-prefix").value;
      if (state.listCursor) p.cursor = state.listCursor;
      const res = await call("x-rcpgo/list", p);
      for (const d of res.documents) {
        const tr = el("tr", { "data-id": d.id }, el("td", {}, el("code", {}, d.id)), el("td", {}, d.title || ""),
          el("td", { class: "num size", title: d.size !== undefined ? d.size + " bytes of text" : undefined }, d.size !== undefined ? humanBytes(d.size) : ""),
          el("td", { class: "actions" }, el("button", { type: "button", class: "danger", "aria-label": "Delete " + d.id, onclick: (ev) => deleteDoc(d.id, tr, ev.currentTarget) }, "Delete")));
        rows.append(tr);
      }
      if (!rows.children.length) rows.append(el("tr", {}, el("td", { colspan: "4" }, "No documents.")));
      state.listCursor = res.nextCursor || "";
      $("list-more").hidden = !res.nextCursor;
    } catch (e) { renderError($("index-error"), e); }
  }
  // deleteDoc asks for a second click on the same button (no modal
  // confirm(), which blocks the page and keyboard users alike).
  async function deleteDoc(id, tr, btn) {
    if (btn.dataset.armed !== "1") {
      btn.dataset.armed = "1";
      btn.textContent = "Confirm delete";
      btn.setAttribute("aria-label", "Confirm delete " + id);
      setTimeout(() => { if (btn.isConnected) { btn.dataset.armed = ""; btn.textContent = "Delete"; btn.setAttribute("aria-label", "Delete " + id); } }, 5000);
      return;
    }
    try {
      const res = await call("index/delete", { ids: [id] });
      if (res.indexVersion) $("index-version").textContent = res.indexVersion;
      $("upload-status").textContent = `deleted ${id}`;
      tr.remove();
    } catch (e) { renderError($("index-error"), e); }
  }
  $("list-form").addEventListener("submit", (ev) => { ev.preventDefault(); listDocs(true); });
  $("list-more").addEventListener("click", () => listDocs(false));
  async function addDocs(docs, chunk) {
    const p = { documents: docs };
    if (chunk) p.chunk = true;
    const res = await call("index/add", p);
    if (res.indexVersion) $("index-version").textContent = res.indexVersion;
    return res;
  }
  // extract posts one file to the console API with upload progress.
  function extract(file, onProgress) {
    return new Promise((resolve, reject) => {
      const x = new XMLHttpRequest();
      x.open("POST", "/console/api/extract?name=" + encodeURIComponent(file.name));
      x.setRequestHeader("Content-Type", "application/octet-stream");
      if (state.token) x.setRequestHeader("Authorization", "Bearer " + state.token);
      x.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
      x.onload = () => {
        let body; try { body = JSON.parse(x.responseText); } catch (e) { body = { error: x.responseText }; }
        if (x.status === 200) resolve(body.documents); else reject(new Error(`${file.name}: ${body.error || "HTTP " + x.status}`));
      };
      x.onerror = () => reject(new Error(`${file.name}: network error`));
      x.send(file);
    });
  }
  $("paste-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    show($("index-error"));
    const text = $("paste-text").value;
    if (!text.trim()) { renderError($("index-error"), new Error("Paste some text first.")); return; }
    try {
      const meta = parseJSONField("paste-meta", "Metadata");
      const [doc] = await extract(new File([text], "pasted.txt", { type: "text/plain" }), () => {});
      if ($("paste-id").value.trim()) doc.id = $("paste-id").value.trim();
      const title = $("paste-title").value.trim();
      doc.meta = Object.assign({}, meta, { title: title || doc.meta.title, format: "text" });
      const res = await addDocs([doc], false);
      $("upload-status").textContent = `added ${res.ids.join(", ")}`;
      $("paste-text").value = "";
      listDocs(true);
    } catch (e) { renderError($("index-error"), e); }
  });
  $("upload-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    show($("index-error"));
    const files = Array.from($("upload-files").files);
    if (!files.length) { renderError($("index-error"), new Error("Choose files first.")); return; }
    const bar = $("upload-progress"), status = $("upload-status");
    $("upload-button").disabled = true;
    let added = 0;
    try {
      const meta = parseJSONField("upload-meta", "Metadata");
      const total = files.reduce((n, f) => n + f.size, 0) || 1;
      let sent = 0;
      for (const f of files) {
        status.textContent = `extracting ${f.name}…`;
        const docs = await extract(f, (frac) => { bar.value = (sent + frac * f.size) / total * 0.5; });
        sent += f.size;
        for (const d of docs) d.meta = Object.assign({}, meta, d.meta);
        for (let i = 0; i < docs.length; i += 64) {
          await addDocs(docs.slice(i, i + 64), $("upload-chunk").checked);
          added += Math.min(64, docs.length - i);
          status.textContent = `indexed ${added} document${added === 1 ? "" : "s"}`;
          bar.value = 0.5 + 0.5 * (sent - f.size + f.size * Math.min(1, (i + 64) / docs.length)) / total;
        }
      }
      bar.value = 1;
      status.textContent = `done: ${added} document${added === 1 ? "" : "s"} from ${files.length} file${files.length === 1 ? "" : "s"}`;
      listDocs(true);
    } catch (e) { renderError($("index-error"), e); }
    finally { $("upload-button").disabled = false; }
  });

  // ---------- evaluate ----------
  let datasets = [];
  async function loadDatasets() {
    if (document.body.dataset.eval !== "1") { $("eval-disabled").hidden = false; $("eval-button").disabled = true; return; }
    try {
      const r = await fetch("/console/api/datasets", { headers: authHeaders({}), credentials: "omit" });
      const body = await r.json();
      if (!r.ok) throw new Error(body.error || "HTTP " + r.status);
      datasets = body.datasets || [];
      fillSelect($("eval-dataset"), datasets.map((d) => d.name));
      const fillSplits = () => { const d = datasets.find((x) => x.name === $("eval-dataset").value); fillSelect($("eval-split"), d ? d.splits : [], { current: d && d.splits.includes("test") ? "test" : undefined }); };
      $("eval-dataset").addEventListener("change", fillSplits);
      fillSplits();
      if (!datasets.length) { $("eval-disabled").hidden = false; $("eval-disabled").textContent = "No BEIR datasets under the server's --ui-datasets directory."; }
    } catch (e) { renderError($("eval-error"), e); }
  }
  // chartSVG draws an eval.Chart — the server's choice of metrics, labels,
  // colours and curve cutoffs — as the rcp CLI draws its chart files: grouped
  // bars of the headline metrics per mode with their values, and each mode's
  // recall@k curve on a log axis.
  const SVGNS = "http://www.w3.org/2000/svg";
  function svgEl(tag, attrs, ...kids) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const kid of kids) e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    return e;
  }
  function chartSVG(c, label) {
    const W = 1100, H = 460, top = 44, bottom = 396, width = 460, bx = 70, cx = 620;
    const root = svgEl("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": label, "font-family": "sans-serif", "font-size": 13 },
      svgEl("title", {}, label), svgEl("rect", { width: W, height: H, fill: "#fff" }));
    const add = (...kids) => root.append(...kids);
    const text = (x, y, s, attrs) => svgEl("text", Object.assign({ x, y, "text-anchor": "middle" }, attrs), s);
    const yOf = (v, max) => bottom - (v / max) * (bottom - top);
    const frame = (x0, title, yMax, xLabel, yLabel) => {
      add(text(x0 + width / 2, 26, title, { "font-size": 16 }));
      for (let i = 0; i <= 10 && i / 10 <= yMax; i++) {
        const y = yOf(i / 10, yMax);
        add(svgEl("line", { x1: x0, x2: x0 + width, y1: y, y2: y, stroke: "#ddd" }));
        if (i % 2 === 0) add(text(x0 - 8, y + 4, (i / 10).toFixed(1), { "text-anchor": "end" }));
      }
      add(svgEl("path", { d: `M${x0} ${top}V${bottom}H${x0 + width}`, fill: "none", stroke: "#333" }));
      if (xLabel) add(text(x0 + width / 2, bottom + 44, xLabel));
      add(svgEl("text", { transform: `translate(${x0 - 46} ${(top + bottom) / 2}) rotate(-90)`, "text-anchor": "middle" }, yLabel));
    };
    const legend = (x, y, anchor) => c.modes.forEach((m, i) => {
      const yy = y + i * 20, dx = anchor === "end" ? -16 : 16;
      add(svgEl("rect", { x: anchor === "end" ? x - 12 : x, y: yy - 10, width: 12, height: 12, fill: m.color }),
        text(x + dx, yy, m.name, { "text-anchor": anchor }));
    });
    // bars: values per headline metric, one bar per mode
    const n = c.modes.length, yMax = 1.06 + 0.075 * n;
    frame(bx, c.title, yMax, "", "score");
    const group = width / Math.max(1, c.metrics.length), barW = Math.min((group * 0.8) / n, 48);
    c.labels.forEach((l, j) => add(text(bx + group * (j + 0.5), bottom + 20, l, { "font-size": 14 })));
    c.modes.forEach((m, i) => m.values.forEach((v, j) => {
      const x = bx + group * (j + 0.5) + (i - (n - 1) / 2) * barW - barW / 2, y = yOf(v, yMax);
      add(svgEl("rect", { class: "chart-bar", x, y, width: barW, height: bottom - y, fill: m.color }, svgEl("title", {}, `${m.name}: ${c.labels[j]} ${v.toFixed(3)}`)),
        text(x + barW / 2, y - 4, v.toFixed(3), { "font-size": Math.min(11, barW / 2.6) }));
    }));
    legend(bx + 10, top + 14, "start");
    // curves: recall@k on a log axis
    frame(cx, "Recall@k", 1, "k (log scale)", "recall");
    const xOf = (k) => cx + (c.maxK > 1 ? Math.log(k) / Math.log(c.maxK) : 0) * width;
    for (const k of c.ticks) add(svgEl("line", { x1: xOf(k), x2: xOf(k), y1: top, y2: bottom, stroke: "#ddd" }), text(xOf(k), bottom + 20, k));
    for (const m of c.modes) {
      if (!m.curve || !m.curve.length) continue;
      add(svgEl("polyline", { class: "chart-curve", points: m.curve.map((p) => `${xOf(p.k)},${yOf(p.recall, 1)}`).join(" "), fill: "none", stroke: m.color, "stroke-width": 2.5 }));
      for (const p of m.curve) add(svgEl("circle", { cx: xOf(p.k), cy: yOf(p.recall, 1), r: 3.5, fill: m.color }, svgEl("title", {}, `${m.name}: R@${p.k} ${p.recall.toFixed(3)}`)));
    }
    legend(cx + width - 10, bottom - 14 - 20 * (n - 1), "end");
    return root;
  }
  function renderReport(rep, chart) {
    const box = clear($("eval-result"));
    box.append(el("h2", {}, `${rep.dataset}${rep.split ? " / " + rep.split : ""} · ${rep.queries} queries` + (rep.indexVersion ? ` · index ${rep.indexVersion}` : "")));
    const metrics = rep.metrics || [];
    const tb = el("tbody");
    for (const m of rep.modes) {
      tb.append(el("tr", {}, el("th", { scope: "row" }, m.mode.name), ...metrics.map((k) => el("td", { class: "num" }, fmt(m.scores.mean[k], 4))),
        el("td", { class: "num" }, m.latency ? fmt(m.latency.p50Ms, 1) : ""), el("td", { class: "num" }, m.queriesPerSecond ? fmt(m.queriesPerSecond, 1) : "")));
    }
    box.append(el("table", {}, el("caption", {}, "Mean scores per mode"),
      el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Mode"), ...metrics.map((k) => el("th", { scope: "col" }, k)), el("th", { scope: "col" }, "p50 ms"), el("th", { scope: "col" }, "QPS"))), tb));
    if (chart) box.append(chartSVG(chart, `Chart of ${metrics.join(", ")} per mode and the recall@k curve for ${rep.dataset}`));
  }
  $("eval-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    show($("eval-error"));
    let modes;
    try { modes = JSON.parse($("eval-modes").value); if (!Array.isArray(modes)) throw new Error("want a JSON list"); }
    catch (e) { renderError($("eval-error"), new Error("Modes: " + e.message)); return; }
    const req = { dataset: $("eval-dataset").value, split: $("eval-split").value, modes, metrics: $("eval-metrics").value.trim(), maxQueries: Number($("eval-max").value) || 0, ingest: $("eval-ingest").checked };
    $("eval-button").disabled = true;
    const bar = $("eval-progress"), status = $("eval-status");
    bar.value = 0;
    try {
      const r = await fetch("/console/api/eval", { method: "POST", headers: authHeaders({ "Content-Type": "application/json", Accept: "text/event-stream" }), body: JSON.stringify(req), credentials: "omit" });
      if (!r.ok) { const b = await r.json().catch(() => ({})); throw new Error(b.error || "HTTP " + r.status); }
      let done = false;
      await readSSE(r, (e) => {
        if (e.type === "progress") {
          bar.value = e.total ? e.done / e.total : 0;
          status.textContent = e.phase === "ingest" ? `ingesting: ${e.done}${e.total ? "/" + e.total : ""} documents` : `${e.mode}: ${e.done}/${e.total} queries`;
        } else if (e.type === "report") {
          done = true; bar.value = 1; status.textContent = "done"; renderReport(e.report, e.chart);
          $("eval-result").scrollIntoView({ block: "start" });
        }
        else if (e.type === "error") { done = true; throw new Error(e.error); }
      });
      if (!done) throw new Error("the evaluation stream ended early");
    } catch (e) { renderError($("eval-error"), e); }
    finally { $("eval-button").disabled = false; }
  });
  $("report-file").addEventListener("change", async () => {
    show($("eval-error"));
    const f = $("report-file").files[0];
    if (!f) return;
    try {
      const text = await f.text();
      const rep = JSON.parse(text);
      const r = await fetch("/console/api/chart", { method: "POST", headers: authHeaders({ "Content-Type": "application/json" }), body: text, credentials: "omit" });
      if (!r.ok) { const b = await r.json().catch(() => ({})); throw new Error(b.error || "HTTP " + r.status); }
      renderReport(rep, await r.json());
    } catch (e) { renderError($("eval-error"), new Error(f.name + ": " + e.message)); }
  });

  // ---------- start ----------
  async function start() {
    // on a phone the options start folded so the hits are in view
    if (window.matchMedia("(max-width: 720px)").matches) $("options-box").open = false;
    const u = restoreURL();
    if (!(await loadInfo())) return;
    show($("alert"));
    restoreURL(); // selects filled from the capabilities keep the link's values
    const tab = u.get("tab");
    if (tab && tabByName(tab)) selectTab(tabByName(tab));
    loadDatasets();
    if (tab === "index") listDocs(true);
    if (u.get("q")) {
      if (tab === "compare") $("compare-form").requestSubmit();
      else $("search-form").requestSubmit();
    }
  }
  start();
})();
