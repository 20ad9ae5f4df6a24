/* Leadpipe UI: progressive enhancements only. Every page works without this file. */
(function () {
  "use strict";

  // ---- relative times: <time datetime="RFC3339" data-rel> ----------------
  // Mirrors components.relText on the server so the text does not jump.
  var MIN = 60e3, HOUR = 60 * MIN, DAY = 24 * HOUR;
  // The user's own zone (layouts put it on <html data-tz>); the server
  // already wrote the exact time in it into each title.
  var zone = document.documentElement.getAttribute("data-tz") || undefined;
  function dateFormat(opts) {
    try { return new Intl.DateTimeFormat(undefined, Object.assign({ timeZone: zone }, opts)); }
    catch (e) { return new Intl.DateTimeFormat(undefined, opts); } // an unknown zone name
  }
  var monthDay = dateFormat({ month: "short", day: "numeric" });
  var monthDayYear = dateFormat({ month: "short", day: "numeric", year: "numeric" });
  var yearOf = dateFormat({ year: "numeric" });

  function relText(t, now) {
    var d = now - t, future = d < 0, s;
    if (future) d = -d;
    if (d < 45e3) return "just now";
    if (d < 90e3) s = "1 min";
    else if (d < 45 * MIN) s = Math.floor(d / MIN) + " min";
    else if (d < 90 * MIN) s = "1 hour";
    else if (d < DAY) s = Math.round(d / HOUR) + " hours";
    else if (d < 2 * DAY) return future ? "tomorrow" : "yesterday";
    else if (d < 7 * DAY) s = Math.floor(d / DAY) + " days";
    else {
      var dt = new Date(t);
      return (yearOf.format(dt) === yearOf.format(new Date(now)) ? monthDay : monthDayYear).format(dt);
    }
    return future ? "in " + s : s + " ago";
  }

  function updateTimes(root) {
    var now = Date.now();
    var els = (root || document).querySelectorAll("time[data-rel][datetime]");
    for (var i = 0; i < els.length; i++) {
      var el = els[i], t = Date.parse(el.getAttribute("datetime"));
      if (isNaN(t) || el.classList.contains("is-exact")) continue;
      el.textContent = relText(t, now);
    }
  }

  // A tap (or click) on a relative time shows the exact one, and back:
  // a phone has no hover for the title.
  document.addEventListener("click", function (ev) {
    var el = ev.target.closest && ev.target.closest("time[data-rel][title]");
    if (!el || el.closest("a, button, summary")) return;
    if (el.classList.toggle("is-exact")) el.textContent = el.getAttribute("title");
    else updateTimes(el.parentNode);
  });

  // The browser's time zone: sign-in stores it for a new user; the settings
  // page offers it as a one-click choice.
  function browserZone() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { return ""; }
  }
  function fillZones(root) {
    var tz = browserZone();
    if (!tz) return;
    var ins = (root || document).querySelectorAll("input[data-browser-tz]");
    for (var i = 0; i < ins.length; i++) ins[i].value = tz;
    var btns = (root || document).querySelectorAll("button[data-browser-tz-button]");
    for (var j = 0; j < btns.length; j++) {
      btns[j].value = tz;
      btns[j].textContent = "Use this browser's zone (" + tz + ")";
      btns[j].hidden = false;
    }
  }

  // ---- copy to clipboard: <button data-copy="element-id" hidden> --------
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      var ta = document.createElement("textarea");
      ta.value = text;
      ta.setAttribute("readonly", "");
      ta.className = "sr-only";
      document.body.appendChild(ta);
      ta.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      document.body.removeChild(ta);
      ok ? resolve() : reject(new Error("copy failed"));
    });
  }

  function revealCopyButtons(root) {
    var btns = (root || document).querySelectorAll("button[data-copy][hidden]");
    for (var i = 0; i < btns.length; i++) btns[i].hidden = false;
  }

  function announce(btn, msg) {
    var status = btn.parentNode && btn.parentNode.querySelector("[data-copy-status]");
    if (status) status.textContent = msg;
  }

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest("button[data-copy]");
    if (!btn) return;
    ev.preventDefault();
    var target = document.getElementById(btn.getAttribute("data-copy"));
    if (!target) return;
    var text = "value" in target ? target.value : target.textContent;
    var label = btn.getAttribute("data-label") || btn.textContent;
    btn.setAttribute("data-label", label);
    copyText(text).then(function () {
      btn.textContent = "Copied";
      btn.classList.add("is-done");
      announce(btn, "Copied to clipboard");
    }, function () {
      if (target.select) { target.focus(); target.select(); }
      announce(btn, "Press Ctrl+C to copy");
    }).then(function () {
      setTimeout(function () {
        btn.textContent = label;
        btn.classList.remove("is-done");
        announce(btn, "");
      }, 1800);
    });
  });

  // Read-only values select fully on focus, so keyboard copying is one step.
  document.addEventListener("focusin", function (ev) {
    var el = ev.target;
    if (el && el.matches && el.matches("input[readonly][data-select-on-focus]")) {
      setTimeout(function () { el.select(); }, 0);
    }
  });

  // ---- confirmation: <form data-confirm="Rotate the secret?"> -----------
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    // A button may ask for itself (<button data-confirm="Discard …?">).
    var msg = (ev.submitter && ev.submitter.getAttribute("data-confirm")) || (form && form.getAttribute && form.getAttribute("data-confirm"));
    if (msg && !window.confirm(msg)) {
      ev.preventDefault();
      ev.stopImmediatePropagation();
    }
  }, true);

  // ---- narrow screens: keep the current nav tab in view ------------------
  // (the main nav, and the inbox's row of views: Overdue sits past the edge)
  function revealActiveNav() {
    [[".nav-list", ".nav-list a[aria-current='page']"], [".view-tabs ul", ".view-tabs a[aria-current='page']"]].forEach(function (p) {
      var a = document.querySelector(p[1]);
      var list = a && a.closest(p[0]);
      if (!list || list.scrollWidth <= list.clientWidth) return;
      var offset = a.getBoundingClientRect().left - list.getBoundingClientRect().left + list.scrollLeft;
      list.scrollLeft = Math.max(0, offset - (list.clientWidth - a.offsetWidth) / 2);
    });
  }

  // ---- charts: crosshair tooltip ---------------------------------------
  // Each bucket <g> carries its numbers in data-*; hovering the plot or
  // focusing a bucket (arrow keys move between them) shows a crosshair and
  // a tooltip with the bucket's time, deliveries, duplicates and rate.
  function chartParts(el) {
    var plot = el.closest && el.closest("[data-chart-plot]");
    if (!plot) return null;
    return { plot: plot, tip: plot.querySelector(".chart-tip"), line: plot.querySelector(".chart-crosshair"),
      buckets: plot.querySelectorAll(".chart-bucket") };
  }

  function showBucket(parts, b) {
    var set = function (cls, v) { var e = parts.tip.querySelector(cls); if (e) e.textContent = v || ""; };
    set(".chart-tip-when", b.getAttribute("data-when"));
    set(".chart-tip-deliveries", b.getAttribute("data-deliveries"));
    set(".chart-tip-duplicates", b.getAttribute("data-duplicates"));
    set(".chart-tip-rate", b.getAttribute("data-rate"));
    parts.tip.querySelector(".chart-tip-alert").hidden = b.getAttribute("data-alert") !== "open";
    var x = b.getAttribute("data-x");
    parts.line.setAttribute("x1", x);
    parts.line.setAttribute("x2", x);
    parts.line.classList.add("is-on");
    for (var i = 0; i < parts.buckets.length; i++) parts.buckets[i].classList.toggle("is-current", parts.buckets[i] === b);
    parts.tip.hidden = false;
    // x is a percentage of the plot's SVG, which sits between the axis
    // gutters: place the tip beside the point, then keep it inside the
    // chart's box at any width (on a phone it may cover the point).
    var svg = parts.plot.querySelector(".chart-svg"), pr = parts.plot.getBoundingClientRect(), sr = svg.getBoundingClientRect();
    var w = parts.plot.clientWidth, px = sr.left - pr.left + parseFloat(x) / 100 * sr.width, tw = parts.tip.offsetWidth;
    var left = px + 12;
    if (left + tw > w) left = px - tw - 12;
    left = Math.min(Math.max(0, left), Math.max(0, w - tw));
    parts.tip.style.left = left + "px";
  }

  // A tap on a touch screen: show the tapped bucket (a second tap elsewhere
  // on the page hides it).
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest && ev.target.closest(".chart-bucket");
    var parts = b && chartParts(b);
    if (parts) { showBucket(parts, b); return; }
    document.querySelectorAll("[data-chart-plot] .chart-tip:not([hidden])").forEach(function (tip) {
      var p = chartParts(tip);
      if (p && !p.plot.contains(ev.target)) hideBucket(p);
    });
  });

  function hideBucket(parts) {
    parts.tip.hidden = true;
    parts.line.classList.remove("is-on");
    for (var i = 0; i < parts.buckets.length; i++) parts.buckets[i].classList.remove("is-current");
  }

  document.addEventListener("mouseover", function (ev) {
    var b = ev.target.closest && ev.target.closest(".chart-bucket");
    var parts = b && chartParts(b);
    if (parts) showBucket(parts, b);
  });
  document.addEventListener("mouseout", function (ev) {
    var plot = ev.target.closest && ev.target.closest("[data-chart-plot]");
    if (!plot || (ev.relatedTarget && plot.contains(ev.relatedTarget))) return;
    var parts = chartParts(plot);
    if (parts && !plot.contains(document.activeElement)) hideBucket(parts);
  });
  document.addEventListener("focusin", function (ev) {
    var b = ev.target.closest && ev.target.closest(".chart-bucket");
    var parts = b && chartParts(b);
    if (parts) showBucket(parts, b);
  });
  document.addEventListener("focusout", function (ev) {
    var b = ev.target.closest && ev.target.closest(".chart-bucket");
    var parts = b && chartParts(b);
    if (parts && !(ev.relatedTarget && parts.plot.contains(ev.relatedTarget))) hideBucket(parts);
  });
  document.addEventListener("keydown", function (ev) {
    var b = ev.target.closest && ev.target.closest(".chart-bucket");
    var parts = b && chartParts(b);
    if (!parts) return;
    var list = Array.prototype.slice.call(parts.buckets), i = list.indexOf(b), j = i;
    switch (ev.key) {
      case "ArrowLeft": j = Math.max(0, i - 1); break;
      case "ArrowRight": j = Math.min(list.length - 1, i + 1); break;
      case "Home": j = 0; break;
      case "End": j = list.length - 1; break;
      case "Escape": hideBucket(parts); return;
      default: return;
    }
    ev.preventDefault();
    if (j === i) return;
    b.setAttribute("tabindex", "-1");
    list[j].setAttribute("tabindex", "0");
    list[j].focus();
  });

  // ---- lead page: status and owner save on change ----------------------
  // (Their Save buttons are for browsers without JavaScript.)
  document.documentElement.classList.add("js");
  // A choice made with the keyboard (arrows, type-ahead) waits for Enter
  // or for leaving the list: arrowing through the statuses must not save
  // each one on the way.
  function autoSelect(sel) {
    return sel && sel.tagName === "SELECT" && (sel.hasAttribute("data-bulk-auto") || !!sel.closest("form[data-autosave]"));
  }
  function commitSelect(sel) {
    sel.removeAttribute("data-key-picked");
    if (sel.hasAttribute("data-bulk-auto")) {
      var btn = document.getElementById(sel.getAttribute("data-bulk-auto"));
      if (sel.value && btn) sel.form.requestSubmit ? sel.form.requestSubmit(btn) : btn.click();
      return;
    }
    var form = sel.closest("form[data-autosave]");
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
  }
  document.addEventListener("keydown", function (ev) {
    var sel = ev.target;
    if (!autoSelect(sel) || ev.ctrlKey || ev.metaKey) return;
    if (ev.key === "Enter") {
      ev.preventDefault();
      if (sel.hasAttribute("data-key-picked")) commitSelect(sel);
    } else if (ev.key !== "Tab" && ev.key !== "Escape" && ev.key !== "Shift") {
      sel.setAttribute("data-key-picked", "");
    }
  }, true);
  document.addEventListener("focusout", function (ev) {
    var sel = ev.target;
    if (autoSelect(sel) && sel.hasAttribute("data-key-picked") && sel.getAttribute("data-picked-changed") === "1") {
      sel.removeAttribute("data-picked-changed");
      commitSelect(sel);
    }
  });
  document.addEventListener("change", function (ev) {
    var sel = ev.target;
    if (!autoSelect(sel)) return;
    if (sel.hasAttribute("data-key-picked")) { sel.setAttribute("data-picked-changed", "1"); return; }
    commitSelect(sel);
  });

  // ======== #28: inbox, bulk, keyboard, board (pointer drag) =============
  // Everything here enhances plain forms that work without JavaScript.

  function inboxForm() { return document.querySelector("form[data-bulk-form]"); }
  function idBoxes(form) { return form ? form.querySelectorAll("input[name='ids']") : []; }
  function fmt(n) { return Number(n).toLocaleString("en-US"); }

  // ---- inbox: the bulk bar appears with the first ticked lead ----------
  function updateBulk(form) {
    if (!form) return;
    var boxes = idBoxes(form), n = 0;
    for (var i = 0; i < boxes.length; i++) if (boxes[i].checked) n++;
    var all = form.hasAttribute("data-all-matching");
    var sel = form.querySelector("[data-select-matching]");
    var matching = sel ? parseInt(sel.getAttribute("data-matching"), 10) || 0 : 0;
    if (n === 0) { all = false; form.removeAttribute("data-all-matching"); }
    var out = form.querySelector("[data-bulk-count]");
    if (out) out.textContent = n === 0 ? "Tick leads to act on several at once" : all ? "All " + sel.getAttribute("data-matching-text") + " matching selected" : n + " selected";
    var bar = form.querySelector("[data-bulk-bar]");
    if (bar) bar.classList.toggle("has-selection", n > 0);
    if (sel) sel.hidden = n === 0 || all || matching <= n;
    var clear = form.querySelector("[data-bulk-clear]");
    if (clear) clear.hidden = n === 0;
    var allBox = form.querySelector("[data-check-all]");
    if (allBox) { allBox.checked = n > 0 && n === boxes.length; allBox.indeterminate = n > 0 && n < boxes.length; }
    if (n === 0) { var menu = form.querySelector("[data-bulk-menu]"); if (menu) menu.open = false; }
  }

  function setAll(form, on) {
    var boxes = idBoxes(form);
    for (var i = 0; i < boxes.length; i++) boxes[i].checked = on;
    updateBulk(form);
  }

  document.addEventListener("change", function (ev) {
    var t = ev.target;
    if (!t || !t.matches) return;
    var form = t.closest("form[data-bulk-form]");
    if (!form) return;
    if (t.matches("[data-check-all]")) setAll(form, t.checked);
    else if (t.matches("input[name='ids']")) { form.removeAttribute("data-all-matching"); updateBulk(form); }
  });

  document.addEventListener("click", function (ev) {
    var t = ev.target.closest && ev.target.closest("[data-select-matching], [data-bulk-clear]");
    if (!t) return;
    var form = t.closest("form[data-bulk-form]");
    if (t.hasAttribute("data-bulk-clear")) { form.removeAttribute("data-all-matching"); setAll(form, false); return; }
    setAll(form, true);
    form.setAttribute("data-all-matching", "");
    updateBulk(form);
  });

  // "Select all N matching": the ids of every lead the filters match, page
  // by page (GET /leads/ids), changed in chunks of at most 500 through
  // POST /leads/bulk.json, each chunk with its own Idempotency-Key.
  function bulkSet(form, action) {
    if (action === "status") {
      var st = form.querySelector("[name='status']").value;
      return st ? { set: { status: st }, what: "set to " + form.querySelector("[name='status'] option:checked").textContent } : null;
    }
    if (action === "assign") {
      var o = form.querySelector("[name='owner']").value;
      if (!o) return null;
      return { set: { owner_id: o === "none" ? null : o }, what: o === "none" ? "unassigned" : "assigned to " + form.querySelector("[name='owner'] option:checked").textContent };
    }
    if (action === "tag") {
      var tag = form.querySelector("[name='tag']").value.trim();
      return tag ? { set: { add_tags: [tag] }, what: "tagged " + tag } : null;
    }
    return null;
  }

  async function applyToMatching(form, change) {
    var progress = form.querySelector("[data-bulk-progress]");
    var say = function (msg) { progress.hidden = false; progress.textContent = msg; };
    var total = parseInt(form.querySelector("[data-select-matching]").getAttribute("data-matching"), 10) || 0;
    var base = "bulk-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 10);
    var query = form.getAttribute("data-query") || "";
    var cursor = "", done = 0, updated = 0, chunk = 0;
    form.setAttribute("aria-busy", "true");
    try {
      for (;;) {
        var res = await fetch("/leads/ids?" + query + (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""), { headers: { Accept: "application/json" }, credentials: "same-origin" });
        if (!res.ok) throw new Error("listing the leads failed (" + res.status + ")");
        var page = await res.json();
        if (page.ids.length > 0) {
          var br = await fetch("/leads/bulk.json", {
            method: "POST", credentials: "same-origin",
            headers: { "Content-Type": "application/json", Accept: "application/json", "Idempotency-Key": base + "-" + chunk },
            body: JSON.stringify({ ids: page.ids, set: change.set })
          });
          if (!br.ok) {
            var p = {};
            try { p = await br.json(); } catch (e) { /* not JSON */ }
            throw new Error(p.detail || p.title || "the change was refused (" + br.status + ")");
          }
          var out = await br.json();
          for (var i = 0; i < out.items.length; i++) if (out.items[i].status === "updated") updated++;
          done += page.ids.length;
          chunk++;
          say("Updated " + fmt(done) + " of " + fmt(Math.max(total, done)) + "…");
        }
        if (!page.next_cursor) break;
        cursor = page.next_cursor;
      }
      sessionStorage.setItem("leadpipe-flash", fmt(updated) + (updated === 1 ? " lead " : " leads ") + change.what + (done > updated ? " (" + fmt(done - updated) + " already so)." : "."));
      location.reload();
    } catch (e) {
      say("Stopped after " + fmt(done) + ": " + e.message + ". What was done stays done; try again to finish.");
      form.removeAttribute("aria-busy");
    }
  }

  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (!form.matches || !form.matches("form[data-bulk-form][data-all-matching]")) return;
    ev.preventDefault();
    if (form.getAttribute("aria-busy") === "true") return;
    var action = ev.submitter && ev.submitter.name === "action" ? ev.submitter.value : "";
    var change = bulkSet(form, action);
    if (!change) return;
    form.querySelector("[data-bulk-menu]").open = false;
    applyToMatching(form, change);
  });

  // A message left by a bulk change that reloaded the page.
  function showStoredFlash() {
    var msg = sessionStorage.getItem("leadpipe-flash");
    if (!msg) return;
    sessionStorage.removeItem("leadpipe-flash");
    var area = document.querySelector("[data-testid='flash-area']");
    if (!area) return;
    var div = document.createElement("div");
    div.className = "flash flash-success";
    div.setAttribute("role", "status");
    div.setAttribute("data-testid", "flash");
    var span = document.createElement("span");
    span.textContent = msg;
    div.appendChild(span);
    area.appendChild(div);
  }

  // The filter sheet: empty values leave the URL (the view decides them).
  document.addEventListener("htmx:configRequest", function (ev) {
    var elt = ev.detail && ev.detail.elt;
    if (!elt || !elt.matches || !elt.matches("form[data-testid='filters']")) return;
    var ps = ev.detail.parameters;
    if (ps && typeof ps.forEach === "function" && ps.delete) {
      var empty = [];
      ps.forEach(function (v, k) { if (v === "") empty.push(k); });
      empty.forEach(function (k) { ps.delete(k); });
    } else if (ps) {
      for (var k in ps) if (ps[k] === "") delete ps[k];
    }
  });

  // ---- keyboard: j/k move, x select, s status, a assign to me, n next
  // step, / search, ? the list. On the inbox and on a lead's page. --------
  function rows() { return Array.prototype.slice.call(document.querySelectorAll("[data-lead-list] tr[data-lead-id]")); }
  function currentRow() { return document.querySelector("[data-lead-list] tr.is-current"); }
  function moveCurrent(step) {
    var rs = rows();
    if (!rs.length) return;
    var i = rs.indexOf(currentRow());
    var j = i < 0 ? (step > 0 ? 0 : rs.length - 1) : Math.min(rs.length - 1, Math.max(0, i + step));
    if (i >= 0) rs[i].classList.remove("is-current");
    rs[j].classList.add("is-current");
    var link = rs[j].querySelector("[data-testid='lead-link']");
    if (link) link.focus({ preventScroll: true });
    rs[j].scrollIntoView({ block: "nearest" });
  }
  function ensureSelected(form) {
    var any = false, boxes = idBoxes(form);
    for (var i = 0; i < boxes.length; i++) if (boxes[i].checked) any = true;
    var cur = currentRow();
    if (!any && cur) {
      var b = cur.querySelector("input[name='ids']");
      b.checked = true;
      updateBulk(form);
      any = true;
    }
    return any;
  }
  function rememberList() {
    var rs = rows();
    if (!rs.length) return;
    try {
      sessionStorage.setItem("leadpipe-list", JSON.stringify({ url: location.pathname + location.search, ids: rs.map(function (r) { return r.getAttribute("data-lead-id"); }) }));
    } catch (e) { /* storage full or off */ }
  }
  function storedList() {
    try { return JSON.parse(sessionStorage.getItem("leadpipe-list") || "null"); } catch (e) { return null; }
  }
  function openShortcuts() {
    var d = document.getElementById("shortcuts");
    if (d && !d.open && d.showModal) d.showModal();
  }

  document.addEventListener("click", function (ev) {
    if (ev.target.closest && ev.target.closest("[data-shortcuts-open]")) openShortcuts();
  });

  document.addEventListener("keydown", function (ev) {
    if (ev.defaultPrevented || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var t = ev.target;
    if (t && t.closest && t.closest("input, select, textarea, [contenteditable='true'], dialog[open]")) {
      if (ev.key === "Escape" && t.id === "f-q") t.blur();
      return;
    }
    var inbox = document.querySelector("[data-lead-list]");
    var leadPage = document.querySelector("[data-testid='status-form']");
    if (!inbox && !leadPage && ev.key !== "/") return;
    var form = inboxForm();
    switch (ev.key) {
      case "j": case "k":
        if (inbox) { moveCurrent(ev.key === "j" ? 1 : -1); break; }
        if (leadPage) {
          var list = storedList(), id = location.pathname.split("/").pop();
          var i = list ? list.ids.indexOf(id) : -1;
          var next = i < 0 ? null : list.ids[i + (ev.key === "j" ? 1 : -1)];
          if (next) location.href = "/leads/" + next;
        }
        break;
      case "x":
        if (!inbox) return;
        var cur = currentRow();
        if (!cur) { moveCurrent(1); cur = currentRow(); }
        var box = cur && cur.querySelector("input[name='ids']");
        if (box) { box.checked = !box.checked; box.dispatchEvent(new Event("change", { bubbles: true })); }
        break;
      case "s":
        if (inbox) {
          if (!ensureSelected(form)) return;
          form.querySelector("[data-bulk-menu]").open = true;
          form.querySelector("#bulk-status").focus();
        } else if (leadPage) {
          document.getElementById("f-status").focus();
        }
        break;
      case "a":
        if (inbox) {
          if (!ensureSelected(form)) return;
          var owner = form.querySelector("#bulk-owner");
          owner.value = form.getAttribute("data-me");
          form.requestSubmit(document.getElementById("bulk-assign"));
        } else if (leadPage) {
          var me = document.querySelector("[data-testid='assign-me']");
          if (me) me.click();
        }
        break;
      case "n":
        if (inbox) {
          var row = currentRow();
          if (row) location.href = "/leads/" + row.getAttribute("data-lead-id") + "#next-step";
        } else if (leadPage) {
          document.getElementById("f-next").focus();
        }
        break;
      case "/":
        var q = document.getElementById("f-q");
        if (q) { q.focus(); q.select(); } else { var l = storedList(); location.href = (l ? l.url : "/leads") + "#search"; }
        break;
      case "?":
        openShortcuts();
        break;
      default:
        return;
    }
    ev.preventDefault();
  });

  // ---- board: drag a card by pointer (mouse, pen, touch) ---------------
  // Pressing the grip (any pointer) or the card's body (a mouse) and moving
  // lifts the card; the column under the pointer lights up; letting go
  // over another column submits the card's own status form, the path the
  // keyboard and browsers without JavaScript take too.
  var drag = null;

  function columnAt(x, y) {
    var el = document.elementFromPoint(x, y);
    return el && el.closest ? el.closest(".board-col[data-status]") : null;
  }
  function clearTargets() {
    var t = document.querySelectorAll(".board-col.is-drop-target");
    for (var i = 0; i < t.length; i++) t[i].classList.remove("is-drop-target");
  }
  function endDrag() {
    if (!drag) return;
    if (drag.ghost) drag.ghost.remove();
    drag.card.classList.remove("is-dragging");
    document.body.classList.remove("is-dragging-card");
    clearTargets();
    if (drag.timer) clearInterval(drag.timer);
    drag = null;
  }

  document.addEventListener("pointerdown", function (ev) {
    if (ev.button !== 0 || drag) return;
    var card = ev.target.closest && ev.target.closest(".board-card[data-lead-id]");
    if (!card) return;
    var onGrip = !!ev.target.closest("[data-grip]");
    if (!onGrip && (ev.pointerType !== "mouse" || ev.target.closest("a, select, button, input, label, summary, time"))) return;
    drag = { card: card, pointer: ev.pointerId, x0: ev.clientX, y0: ev.clientY, started: false };
    if (onGrip) ev.preventDefault();
  });

  document.addEventListener("pointermove", function (ev) {
    if (!drag || ev.pointerId !== drag.pointer) return;
    var card = drag.card;
    if (!drag.started) {
      if (Math.abs(ev.clientX - drag.x0) + Math.abs(ev.clientY - drag.y0) < 6) return;
      var r = card.getBoundingClientRect();
      var ghost = card.cloneNode(true);
      ghost.removeAttribute("data-testid");
      var withIds = ghost.querySelectorAll("[id]");
      for (var i = 0; i < withIds.length; i++) withIds[i].removeAttribute("id");
      ghost.classList.add("board-ghost");
      ghost.style.width = r.width + "px";
      document.body.appendChild(ghost);
      drag.ghost = ghost;
      drag.dx = drag.x0 - r.left;
      drag.dy = drag.y0 - r.top;
      drag.started = true;
      card.classList.add("is-dragging");
      document.body.classList.add("is-dragging-card");
      // Near the board's edge, scroll it sideways (phones: one column shows).
      drag.timer = setInterval(function () {
        var b = document.querySelector("[data-board]");
        if (!b || !drag) return;
        var br = b.getBoundingClientRect(), edge = 40;
        if (drag.x > br.right - edge) b.scrollLeft += 14;
        else if (drag.x < br.left + edge) b.scrollLeft -= 14;
      }, 30);
    }
    ev.preventDefault();
    drag.x = ev.clientX;
    drag.ghost.style.left = (ev.clientX - drag.dx) + "px";
    drag.ghost.style.top = (ev.clientY - drag.dy) + "px";
    var col = columnAt(ev.clientX, ev.clientY), home = card.closest(".board-col");
    clearTargets();
    if (col && col !== home) col.classList.add("is-drop-target");
  });

  document.addEventListener("pointerup", function (ev) {
    if (!drag || ev.pointerId !== drag.pointer) return;
    var d = drag;
    if (!d.started) { drag = null; return; }
    var col = columnAt(ev.clientX, ev.clientY), home = d.card.closest(".board-col");
    endDrag();
    // The click that follows a drag must not open the lead.
    var swallow = function (e) { e.preventDefault(); e.stopPropagation(); };
    document.addEventListener("click", swallow, { capture: true, once: true });
    setTimeout(function () { document.removeEventListener("click", swallow, { capture: true }); }, 0);
    if (col && col !== home) moveCard(d.card, col);
  });
  document.addEventListener("pointercancel", endDrag);
  document.addEventListener("keydown", function (ev) { if (ev.key === "Escape") endDrag(); });

  function moveCard(card, col) {
    var form = card.querySelector("form[data-move-form]");
    var sel = form && form.querySelector("select[name='status']");
    var status = col.getAttribute("data-status");
    if (!sel || sel.value === status) return;
    sel.value = status;
    var list = col.querySelector(".board-cards");
    if (list) list.insertBefore(card, list.firstChild); // show the move at once
    card.classList.add("is-moving");
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
  }

  // After htmx swapped the page for a move, put the keyboard on Undo.
  document.addEventListener("htmx:afterSettle", function () {
    var undo = document.querySelector("#main [data-testid='undo']");
    if (undo) undo.focus();
  });

  function enhanceLeads(root) {
    var shortcut = (root || document).querySelectorAll("[data-shortcuts-open]");
    for (var i = 0; i < shortcut.length; i++) shortcut[i].hidden = false;
    var titles = (root || document).querySelectorAll(".board-card a");
    for (var j = 0; j < titles.length; j++) titles[j].setAttribute("draggable", "false");
    updateBulk(inboxForm());
    rememberList();
  }

  function leadsReady() {
    showStoredFlash();
    if (location.hash === "#search") { var q = document.getElementById("f-q"); if (q) q.focus(); }
    if (location.hash === "#next-step") { var n = document.getElementById("f-next"); if (n) n.focus(); }
  }
  function enhance(root) {
    updateTimes(root);
    revealCopyButtons(root);
    fillZones(root);
    enhanceLeads(root);
  }

  // htmx fires htmx:load for every piece of swapped-in content.
  document.addEventListener("htmx:load", function (ev) { enhance(ev.target); });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { enhance(document); revealActiveNav(); leadsReady(); });
  } else {
    enhance(document);
    revealActiveNav();
    leadsReady();
  }
  setInterval(function () { updateTimes(document); }, 30e3);

  // ---- #31: dead letters, mapping helper ---------------------------------
  // Dead letters: "All" ticks every row of its form.
  document.addEventListener("change", function (ev) {
    var t = ev.target;
    if (!t || !t.matches || !t.matches("[data-check-all='dl']")) return;
    t.closest("form").querySelectorAll("input[data-check='dl']").forEach(function (b) { b.checked = t.checked; });
  });

  // Mapping: a click on a key of the failing payload puts its path into
  // the path field focused last (the natural key by default) and fires
  // input, so the live preview follows.
  var lastPathInput = null;
  document.addEventListener("focusin", function (ev) {
    if (ev.target && ev.target.matches && ev.target.matches("input[data-path-input]")) lastPathInput = ev.target;
  });
  document.addEventListener("mousedown", function (ev) {
    // Keep the field's focus from moving to the key button first.
    if (ev.target.closest && ev.target.closest(".json-key")) ev.preventDefault();
  });
  document.addEventListener("click", function (ev) {
    var key = ev.target.closest && ev.target.closest(".json-key");
    if (!key) return;
    var form = key.closest("form");
    var input = (lastPathInput && form && form.contains(lastPathInput)) ? lastPathInput : form && form.querySelector("input[name='natural_key_path']");
    if (!input) return;
    input.value = key.getAttribute("data-json-path");
    input.dispatchEvent(new Event("input", { bubbles: true }));
    input.focus();
    var f = input.closest(".field");
    var err = f && f.querySelector(".field-error");
    if (err && !input.form.querySelector("[data-testid='mapping-errors']")) { err.remove(); input.removeAttribute("aria-invalid"); }
  });

  // Web form builder: the preview follows the settings as they are typed
  // (the "Update preview" button posts them into the preview frame).
  var previewTimer = null;
  document.addEventListener("input", function (ev) {
    var form = ev.target && ev.target.closest && ev.target.closest("form[data-live-preview]");
    if (!form) return;
    clearTimeout(previewTimer);
    previewTimer = setTimeout(function () {
      var b = form.querySelector("[data-preview-button]");
      if (b) form.requestSubmit(b);
    }, 400);
  });
  // ---- live inbox and board (docs/ARCHITECTURE.md, "Live inbox") ------------
  // One EventSource per page holding a [data-live] strip. New and
  // reassigned leads count in the tab title; the list reloads itself (htmx)
  // when that disturbs nobody (first page, scrolled to the top, nothing
  // ticked, no menu open), otherwise the strip offers "N new leads — Show".
  // Leads assigned to me raise a browser notification once allowed.
  (function live() {
    var bar = document.querySelector("[data-live]");
    if (!bar || !window.EventSource) return;
    var me = bar.getAttribute("data-live-me") || "";
    var baseTitle = document.title.replace(/^\(\d+\) /, "");
    var fresh = {}, freshN = 0;   // leads arrived since the user last looked
    var pending = 0;              // of those, not in the list yet
    var missed = false;           // the server lost our place: something may have changed
    var shown = false;            // Show was clicked: the swap it causes marks the leads seen
    var canNotify = "Notification" in window;

    function curBar() { return document.querySelector("[data-live]") || bar; }
    function render() {
      var b = curBar();
      document.title = freshN > 0 ? "(" + freshN + ") " + baseTitle : baseTitle;
      var show = b.querySelector("[data-live-show]"), ask = b.querySelector("[data-live-notify]");
      if (show) {
        show.hidden = pending === 0 && !missed;
        show.textContent = pending === 0 ? "Leads may have changed — Show" :
          pending === 1 ? "1 new lead — Show" : pending + " new leads — Show";
        show.setAttribute("href", location.pathname + location.search);
      }
      if (ask) ask.hidden = !(canNotify && Notification.permission === "default");
      b.hidden = (!show || show.hidden) && (!ask || ask.hidden);
    }
    function markRows() {
      document.querySelectorAll("[data-lead-id]").forEach(function (el) {
        if (fresh[el.getAttribute("data-lead-id")]) el.classList.add("is-live-new");
      });
    }
    function quiet() {
      var target = document.querySelector(curBar().getAttribute("data-live-target"));
      if (!target || !window.htmx || target.id !== "inbox-results") return false; // the board waits for Show
      if (new URLSearchParams(location.search).has("cursor") || window.scrollY > 120) return false;
      if (document.querySelector(".row-check:checked, details[open], .is-dragging")) return false;
      var a = document.activeElement;
      return !(a && target.contains(a) && a.matches("input, select, textarea"));
    }
    function refresh() {
      var sel = curBar().getAttribute("data-live-target");
      var target = document.querySelector(sel);
      if (!target || !window.htmx) { location.reload(); return; }
      htmx.ajax("GET", location.pathname + location.search, { target: sel, select: sel, swap: "outerHTML ignoreTitle:true" });
    }
    // Any list swap (Show, a filter, a move on the board) brings the list
    // up to date.
    // htmx sets the title from the response after the swap: the count
    // goes back on once the swap settled.
    // A swap of #main brings a fresh (hidden) strip: show it as it was at
    // once, before anything paints, so nothing below it moves.
    document.addEventListener("htmx:afterSwap", function () { markRows(); render(); });
    document.addEventListener("htmx:afterSettle", function () {
      pending = 0; missed = false; markRows();
      if (shown) { shown = false; fresh = {}; freshN = 0; }
      baseTitle = document.title.replace(/^\(\d+\) /, "");
      render();
    });
    // A click or key in a visible tab means the user has seen the count.
    function seen() {
      if (document.visibilityState !== "visible" || freshN === 0 || pending > 0) return;
      fresh = {}; freshN = 0; render();
    }
    document.addEventListener("pointerdown", seen, true);
    document.addEventListener("keydown", seen, true);
    document.addEventListener("click", function (ev) {
      var show = ev.target.closest && ev.target.closest("[data-live-show]");
      if (show) { ev.preventDefault(); shown = true; refresh(); return; }
      var ask = ev.target.closest && ev.target.closest("[data-live-notify]");
      if (ask && canNotify) {
        var done = function () { render(); };
        var p = Notification.requestPermission(done);
        if (p && p.then) p.then(done);
      }
    });

    function notify(ev) {
      if (!canNotify || Notification.permission !== "granted" || !me || ev.owner_id !== me || ev.by === me) return;
      try {
        var n = new Notification(ev.type === "lead.created" ? "New lead assigned to you" : "A lead was assigned to you",
          { body: ev.name || "Open Leadpipe to see it", tag: "lead-" + ev.lead_id });
        n.onclick = function () { window.focus(); location.href = "/leads/" + ev.lead_id; };
      } catch (e) { /* some browsers allow notifications only from a service worker */ }
    }

    var refreshTimer = 0;
    var es = new EventSource(bar.getAttribute("data-live"));
    es.addEventListener("lead", function (m) {
      var ev;
      try { ev = JSON.parse(m.data); } catch (e) { return; }
      if (!ev || !ev.lead_id) return;
      notify(ev);
      if (!fresh[ev.lead_id]) { fresh[ev.lead_id] = true; freshN++; }
      pending++;
      render();
      // Leads of one burst reload the list once.
      if (quiet() && !refreshTimer) refreshTimer = setTimeout(function () { refreshTimer = 0; if (quiet()) refresh(); }, 150);
    });
    // The server lost our place (restart, a long absence): what changed
    // meanwhile is unknown, so offer a refresh.
    es.addEventListener("reset", function () { missed = true; render(); });
    window.addEventListener("pagehide", function () { es.close(); });
    render();
  })();
})();
