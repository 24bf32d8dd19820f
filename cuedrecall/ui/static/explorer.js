/* The explorer's page (cuedrecall/ui/app.py). Plain JS, no build step, no network beyond its own origin.
   Rules: every call sends the token in the X-CuedRecall-Token header (read once from the page's URL); record
   text is only ever set with textContent; the trace view arrives as markup the server escaped. */
(function () {
  "use strict";
  var token = new URLSearchParams(window.location.search).get("token") || "";
  var state = { info: {}, agents: [], tab: "memories", stack: [], beforeId: null, offset: 0, next: null,
                traceOffset: 0 };

  function $(id) { return document.getElementById(id); }

  function node(tag, text, cls) {
    var el = document.createElement(tag);
    if (text !== undefined && text !== null) { el.textContent = String(text); }
    if (cls) { el.className = cls; }
    return el;
  }

  function api(path, body) {
    var options = { headers: { "X-CuedRecall-Token": token } };
    if (body !== undefined) {
      options.method = "POST";
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    return fetch(path, options).then(function (response) {
      return response.json().catch(function () { return { ok: false, error: "HTTP " + response.status }; });
    });
  }

  function toast(text, failed) {
    var t = $("toast");
    t.textContent = text;
    t.className = "show" + (failed ? " error" : "");
    window.clearTimeout(toast.timer);
    toast.timer = window.setTimeout(function () { t.className = ""; }, 4000);
  }

  function scope() {
    return { agent_id: $("agent").value, project_id: $("project").value, channel: $("channel").value };
  }

  function query(params) {
    var q = new URLSearchParams();
    Object.keys(params).forEach(function (k) {
      if (params[k] !== null && params[k] !== undefined && params[k] !== "") { q.set(k, params[k]); }
    });
    return q.toString();
  }

  function options(select, values, labels) {
    select.textContent = "";
    values.forEach(function (value, i) {
      var o = node("option", labels ? labels[i] : value);
      o.value = value;
      select.appendChild(o);
    });
  }

  // -- the scope ------------------------------------------------------------------------------

  function agentChanged() {
    var agent = state.agents.filter(function (a) { return a.agent_id === $("agent").value; })[0];
    var projects = agent ? agent.projects : [];
    var channels = agent ? agent.channels : [];
    options($("project"), ["*"].concat(projects), ["every project"].concat(projects.map(function (p) {
      return p === "" ? "global pool only" : p + " (+ global)"; })));
    options($("channel"), [""].concat(channels.filter(function (c) { return c !== ""; })),
      ["every channel"].concat(channels.filter(function (c) { return c !== ""; }).map(function (c) {
        return c + " (+ shared)"; })));
    $("counts").textContent = agent ? agent.memories + " memories, " + agent.episodes + " episodes" : "";
    scopeChanged();
  }

  function scopeChanged() {
    state.stack = []; state.beforeId = null; state.offset = 0;
    show(state.tab);
  }

  // -- browsing -------------------------------------------------------------------------------

  function browse() {
    var kind = state.tab === "episodes" ? "episodes" : "memories";
    var s = scope();
    if (!s.agent_id) { $("pageinfo").textContent = "no agent in this store"; return Promise.resolve(); }
    var params = { kind: kind, agent_id: s.agent_id, project_id: s.project_id, channel: s.channel,
                   limit: $("size").value, before_id: state.beforeId, offset: state.offset,
                   after: $("after").value, before: $("before").value };
    return api("/api/records?" + query(params)).then(function (page) {
      var body = $("rows").querySelector("tbody");
      body.textContent = "";
      if (page.ok === false) { toast(page.error, true); return; }
      page.rows.forEach(function (row) { body.appendChild(recordRow(kind, row)); });
      state.next = page.next_before_id;
      var first = state.stack.length * Number($("size").value) + state.offset + 1;
      var total = kind === "memories" ? page.totals.memories : page.totals.episodes;
      $("pageinfo").textContent = page.count ? "rows " + first + "\u2013" + (first + page.count - 1) + " of " + total
        + (($("after").value || $("before").value) ? " (date filter on)" : "") : "nothing here";
      $("newer").disabled = state.stack.length === 0 && state.offset === 0;
      $("older").disabled = state.next === null;
    });
  }

  function recordRow(kind, row) {
    var tr = node("tr");
    tr.setAttribute("data-ref", row.ref);
    if (row.locked) { tr.className = "locked"; }
    tr.appendChild(node("td")).appendChild(refNode(row.ref));
    tr.appendChild(node("td", (row.timestamp || "").slice(0, 19).replace("T", " ")));
    tr.appendChild(node("td", (row.project_id || "\u2013") + " / " + (row.channel || "\u2013")));
    var text = node("td", row.text + (row.truncated ? " \u2026 (" + row.length + " characters)" : ""), "text");
    tr.appendChild(text);
    var actions = node("td", null, "actions");
    tr.appendChild(actions);
    if (kind === "memories" && state.info.write) {
      actions.appendChild(button("Edit", function () { edit(row, text); }));
      actions.appendChild(button(row.locked ? "Unlock" : "Lock", function () {
        change(row.locked ? "unlock_memory" : "lock_memory", { memory_id: row.id }).then(browse);
      }));
      actions.appendChild(button("Delete", function () { askDelete(row, actions); }));
    }
    return tr;
  }

  function refNode(ref) {
    var span = node("span", ref, "ref");
    span.setAttribute("data-ref", ref);
    return span;
  }

  function button(label, onClick) {
    var b = node("button", label);
    b.type = "button";
    b.addEventListener("click", onClick);
    return b;
  }

  function edit(row, cell) {
    var load = row.truncated ? api("/api/contents?" + query({ agent_id: scope().agent_id, ref: row.ref }))
      .then(function (r) { return r.items && r.items[0] ? r.items[0].content : row.text; })
      : Promise.resolve(row.text);
    load.then(function (full) {
      cell.textContent = "";
      var area = node("textarea");
      area.value = full;
      area.rows = 4;
      area.setAttribute("aria-label", "text of " + row.ref);
      cell.appendChild(area);
      cell.appendChild(button("Save", function () {
        change("update_memory", { memory_id: row.id, content: area.value }).then(browse);
      }));
      cell.appendChild(button("Cancel", browse));
      area.focus();
    });
  }

  function askDelete(row, cell) {
    cell.textContent = "";
    cell.appendChild(node("span", "Delete " + row.ref + " for good? ", "confirm"));
    cell.appendChild(button("Yes, delete", function () {
      change("delete_memory", { memory_id: row.id }, true).then(browse);
    }));
    cell.appendChild(button("Cancel", browse));
  }

  function change(tool, args, confirmed) {
    args.agent_id = scope().agent_id;
    return api("/api/write", { tool: tool, arguments: args, confirm: confirmed === true }).then(function (r) {
      if (r.ok === false) { toast(tool + ": " + r.error, true); } else { toast(tool + ": done"); }
      return r;
    });
  }

  // -- search ---------------------------------------------------------------------------------

  function search(event) {
    event.preventDefault();
    var s = scope();
    var body = { tool: $("tool").value, agent_id: s.agent_id, project_id: s.project_id, channel: s.channel,
                 query: $("query").value, limit: Number($("limit").value) || null };
    if ($("confidence").value) {
      body.time_cue = { after: $("cue-after").value, before: $("cue-before").value,
                        confidence: $("confidence").value };
    }
    $("search-status").textContent = "searching\u2026";
    var started = performance.now();
    return api("/api/search", body).then(function (r) {
      $("answer").textContent = "";
      $("trace").textContent = "";
      if (r.ok === false) { $("search-status").textContent = r.error; $("search-status").className = "error"; return; }
      $("search-status").className = "muted";
      $("search-status").textContent = r.tool + " answered in " + Math.round(performance.now() - started) + " ms";
      if (r.tool === "recall") { showRecall(r.answer); } else { showReconstruct(r.answer); }
      $("trace").innerHTML = r.trace_html; // markup the server built and escaped (cuedrecall/ui/markup.py)
    });
  }

  function showRecall(answer) {
    // best first by each row's rank (1 = best; the wire order is worst to best): docs/tools.md
    var rows = (answer.messages || []).slice().sort(function (a, b) { return a.rank - b.rank; });
    rows.forEach(function (m) {
      var li = node("li");
      li.appendChild(node("span", "#" + m.rank + " ", "rank"));
      if (m.ref) { li.setAttribute("data-ref", m.ref); li.appendChild(refNode(m.ref)); }
      li.appendChild(node("span", " " + (m.timestamp || "").slice(0, 10)));
      var reason = m.match_reason || {};
      var why = ["signal", "score", "admission"].filter(function (k) { return reason[k] !== undefined; })
        .map(function (k) { return k + "=" + reason[k]; }).join(" ");
      if (reason.cue_rank !== undefined && reason.cue_rank !== null) { why += " cue rank #" + (reason.cue_rank + 1); }
      li.appendChild(node("span", why, "why"));
      li.appendChild(node("div", m.content, "content"));
      $("answer").appendChild(li);
    });
    if (!rows.length) { $("answer").appendChild(node("li", "nothing recalled")); }
  }

  function showReconstruct(answer) {
    (answer.items || []).forEach(function (item) {
      var li = node("li");
      li.setAttribute("data-ref", item.head_ref);
      li.appendChild(refNode(item.head_ref));
      (item.claims || []).forEach(function (c) {
        if (c.ref !== item.head_ref) { li.appendChild(document.createTextNode(" ")); li.appendChild(refNode(c.ref)); }
      });
      li.appendChild(node("div", item.content, "content"));
      $("answer").appendChild(li);
    });
    if (!(answer.items || []).length) { $("answer").appendChild(node("li", answer.shortfall_reason || "no item")); }
  }

  // -- profile and the trace log ---------------------------------------------------------------

  function profile() {
    return api("/api/profile?" + query({ agent_id: scope().agent_id })).then(function (r) {
      $("profile-text").textContent = r.ok === false ? r.error : (r.profile || "(no profile)");
      $("profile-editor").hidden = !state.info.write;
      $("profile-edit").value = r.profile || "";
    });
  }

  function traces() {
    if (!state.info.traces) {
      $("traces-status").textContent = "no trace log: start with --traces PATH or set CUEDRECALL_TRACE_LOG";
      return Promise.resolve();
    }
    return api("/api/traces?" + query({ offset: state.traceOffset, limit: 50 })).then(function (r) {
      var body = $("trace-rows").querySelector("tbody");
      body.textContent = "";
      if (r.ok === false) { $("traces-status").textContent = r.error; return; }
      $("traces-status").textContent = r.total + " entries, newest first";
      r.entries.forEach(function (e) {
        var tr = node("tr");
        [e.id, e.at, e.tool, e.agent_id, e.refs, (e.process || "") + (e.cued ? " (cued)" : "")].forEach(
          function (v) { tr.appendChild(node("td", v)); });
        tr.addEventListener("click", function () { openTrace(e.id); });
        body.appendChild(tr);
      });
    });
  }

  function openTrace(id) {
    return api("/api/traces/" + encodeURIComponent(id)).then(function (r) {
      if (r.ok === false) { toast(r.error, true); return; }
      $("trace-entry").innerHTML = r.trace_html; // escaped by the server
    });
  }

  // -- tabs and start --------------------------------------------------------------------------

  function show(tab) {
    state.tab = tab;
    document.querySelectorAll(".tab").forEach(function (b) {
      b.classList.toggle("active", b.getAttribute("data-tab") === tab); });
    $("panel-browse").hidden = !(tab === "memories" || tab === "episodes");
    $("panel-search").hidden = tab !== "search";
    $("panel-profile").hidden = tab !== "profile";
    $("panel-traces").hidden = tab !== "traces";
    if (tab === "memories" || tab === "episodes") { return browse(); }
    if (tab === "profile") { return profile(); }
    if (tab === "traces") { return traces(); }
    return Promise.resolve();
  }

  function start() {
    document.querySelectorAll(".tab").forEach(function (b) {
      b.addEventListener("click", function () { state.stack = []; state.beforeId = null; state.offset = 0;
        show(b.getAttribute("data-tab")); });
    });
    $("agent").addEventListener("change", agentChanged);
    $("project").addEventListener("change", scopeChanged);
    $("channel").addEventListener("change", scopeChanged);
    $("filter").addEventListener("submit", function (event) {
      event.preventDefault();
      var jump = Number($("jump").value);
      state.stack = []; state.beforeId = null; state.offset = jump > 0 ? jump - 1 : 0;
      browse();
    });
    $("clear").addEventListener("click", function () {
      $("after").value = ""; $("before").value = ""; $("jump").value = ""; scopeChanged(); });
    $("size").addEventListener("change", scopeChanged);
    $("older").addEventListener("click", function () {
      if (state.next === null) { return; }
      state.stack.push({ beforeId: state.beforeId, offset: state.offset });
      state.beforeId = state.next; state.offset = 0; browse();
    });
    $("newer").addEventListener("click", function () {
      var previous = state.stack.pop();
      state.beforeId = previous ? previous.beforeId : null; state.offset = previous ? previous.offset : 0; browse();
    });
    $("ask").addEventListener("submit", search);
    $("profile-save").addEventListener("click", function () {
      change("update_profile", { profile: $("profile-edit").value }).then(profile);
    });
    $("traces-older").addEventListener("click", function () { state.traceOffset += 50; traces(); });
    $("traces-newer").addEventListener("click", function () {
      state.traceOffset = Math.max(0, state.traceOffset - 50); traces(); });
    api("/api/info").then(function (info) {
      if (info.ok === false) { toast(info.error, true); return; }
      state.info = info;
      $("mode").textContent = info.write ? "write enabled" : "read-only";
      $("mode").className = "mode" + (info.write ? " write" : "");
      $("db").textContent = info.db + " \u00b7 cuedrecall " + info.version;
      return api("/api/agents").then(function (r) {
        state.agents = r.agents || [];
        options($("agent"), state.agents.map(function (a) { return a.agent_id; }));
        document.body.setAttribute("data-ready", "1");
        agentChanged();
      });
    });
  }

  start();
}());
