/* Leadpipe UI: progressive enhancements only. Every page works without this file. */
(function () {
  "use strict";

  // ---- relative times: <time datetime="RFC3339" data-rel> ----------------
  // Mirrors components.relText on the server so the text does not jump.
  var MIN = 60e3, HOUR = 60 * MIN, DAY = 24 * HOUR;
  var monthDay = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });
  var monthDayYear = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", year: "numeric" });
  var exact = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

  function relText(t, now) {
    var d = now - t, future = d < 0, n, s;
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
      return (dt.getFullYear() === new Date(now).getFullYear() ? monthDay : monthDayYear).format(dt);
    }
    return future ? "in " + s : s + " ago";
  }

  function updateTimes(root) {
    var now = Date.now();
    var els = (root || document).querySelectorAll("time[data-rel][datetime]");
    for (var i = 0; i < els.length; i++) {
      var el = els[i], t = Date.parse(el.getAttribute("datetime"));
      if (isNaN(t)) continue;
      el.textContent = relText(t, now);
      if (!el.hasAttribute("data-rel-done")) {
        // Keep the exact UTC time from the server and add the reader's local time.
        var utc = el.getAttribute("title");
        el.setAttribute("title", exact.format(new Date(t)) + (utc ? " (" + utc + ")" : ""));
        el.setAttribute("data-rel-done", "");
      }
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
  function revealActiveNav() {
    var a = document.querySelector(".nav-list a[aria-current='page']");
    var list = a && a.closest(".nav-list");
    if (!list || list.scrollWidth <= list.clientWidth) return;
    var offset = a.getBoundingClientRect().left - list.getBoundingClientRect().left + list.scrollLeft;
    list.scrollLeft = Math.max(0, offset - (list.clientWidth - a.offsetWidth) / 2);
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
  document.addEventListener("change", function (ev) {
    var sel = ev.target;
    var form = sel && sel.closest && sel.tagName === "SELECT" && sel.closest("form[data-autosave]");
    if (!form) return;
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
  });

  // ---- inbox: select every lead on the page, count the selection -------
  function updateBulk(form) {
    if (!form) return;
    var boxes = form.querySelectorAll("input[name='ids']"), n = 0;
    for (var i = 0; i < boxes.length; i++) if (boxes[i].checked) n++;
    var out = form.querySelector("[data-bulk-count]");
    if (out) out.textContent = n === 0 ? "Select leads to act on several at once" : (n === 1 ? "1 lead selected" : n + " leads selected");
    var bar = form.querySelector(".bulk-bar");
    if (bar) bar.classList.toggle("has-selection", n > 0);
    var all = form.querySelector("[data-check-all]");
    if (all) { all.checked = n > 0 && n === boxes.length; all.indeterminate = n > 0 && n < boxes.length; }
  }
  document.addEventListener("change", function (ev) {
    var t = ev.target;
    if (!t || !t.matches) return;
    var form = t.closest("form[data-testid='bulk-form']");
    if (!form) return;
    if (t.matches("[data-check-all]")) {
      var boxes = form.querySelectorAll("input[name='ids']");
      for (var i = 0; i < boxes.length; i++) boxes[i].checked = t.checked;
    }
    if (t.matches("[data-check-all], input[name='ids']")) updateBulk(form);
  });

  // ---- board: drag a card to another column ----------------------------
  // Dropping submits the card's own "Move to…" form with the target status
  // (htmx swaps the page in place; without htmx it is a normal POST), so
  // drag and drop and the keyboard take exactly the same path.
  var dragged = null;

  function makeDraggable(root) {
    var cards = (root || document).querySelectorAll(".board-card[data-lead-id]");
    for (var i = 0; i < cards.length; i++) cards[i].setAttribute("draggable", "true");
  }

  function columnOf(el) { return el && el.closest && el.closest(".board-col[data-status]"); }

  document.addEventListener("dragstart", function (ev) {
    var card = ev.target.closest && ev.target.closest(".board-card[data-lead-id]");
    if (!card) return;
    dragged = card;
    card.classList.add("is-dragging");
    if (ev.dataTransfer) {
      ev.dataTransfer.effectAllowed = "move";
      try { ev.dataTransfer.setData("text/plain", card.getAttribute("data-lead-name") || ""); } catch (e) { /* old browsers */ }
    }
  });
  document.addEventListener("dragend", function () {
    if (dragged) dragged.classList.remove("is-dragging");
    dragged = null;
    var t = document.querySelectorAll(".board-col.is-drop-target");
    for (var i = 0; i < t.length; i++) t[i].classList.remove("is-drop-target");
  });
  document.addEventListener("dragover", function (ev) {
    var col = dragged && columnOf(ev.target);
    if (!col) return;
    ev.preventDefault();
    if (ev.dataTransfer) ev.dataTransfer.dropEffect = columnOf(dragged) === col ? "none" : "move";
    var t = document.querySelectorAll(".board-col.is-drop-target");
    for (var i = 0; i < t.length; i++) if (t[i] !== col) t[i].classList.remove("is-drop-target");
    if (columnOf(dragged) !== col) col.classList.add("is-drop-target");
  });
  document.addEventListener("drop", function (ev) {
    var col = dragged && columnOf(ev.target);
    if (!col) return;
    ev.preventDefault();
    col.classList.remove("is-drop-target");
    var card = dragged, status = col.getAttribute("data-status");
    var form = card.querySelector("form[data-move-form]");
    var btn = form && form.querySelector("button[name='status'][value='" + status + "']");
    if (!btn) return; // dropped on its own column
    var list = col.querySelector(".board-cards");
    if (list) list.insertBefore(card, list.firstChild); // show the move at once
    card.classList.add("is-moving");
    btn.click(); // htmx reads the status from the clicked button
  });

  // After htmx swapped the page for a move, put the keyboard on Undo.
  document.addEventListener("htmx:afterSettle", function (ev) {
    var undo = document.querySelector("#main [data-testid='undo']");
    if (undo) undo.focus();
  });

  // Phones: the inbox filters start folded behind "Filters (n)".
  // Wider again (a rotated phone), they open: there is no button there.
  var phone = window.matchMedia ? window.matchMedia("(max-width: 640px)") : null;
  function setFilters(root, open) {
    var ds = (root || document).querySelectorAll("details[data-fold-filters]");
    for (var i = 0; i < ds.length; i++) ds[i].open = open;
  }
  function foldFilters(root) {
    if (phone && phone.matches) setFilters(root, false);
  }
  if (phone && phone.addEventListener) {
    phone.addEventListener("change", function (e) { setFilters(document, !e.matches); });
  }

  function enhance(root) {
    updateTimes(root);
    revealCopyButtons(root);
    makeDraggable(root);
  }

  // htmx fires htmx:load for every piece of swapped-in content.
  document.addEventListener("htmx:load", function (ev) { enhance(ev.target); });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { enhance(document); revealActiveNav(); foldFilters(document); });
  } else {
    enhance(document);
    revealActiveNav();
    foldFilters(document);
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
})();
