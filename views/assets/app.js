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
    else if (d < DAY) s = Math.floor(d / HOUR) + " hours";
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
    var msg = form && form.getAttribute && form.getAttribute("data-confirm");
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

  function enhance(root) {
    updateTimes(root);
    revealCopyButtons(root);
  }

  // htmx fires htmx:load for every piece of swapped-in content.
  document.addEventListener("htmx:load", function (ev) { enhance(ev.target); });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { enhance(document); revealActiveNav(); });
  } else {
    enhance(document);
    revealActiveNav();
  }
  setInterval(function () { updateTimes(document); }, 30e3);
})();
