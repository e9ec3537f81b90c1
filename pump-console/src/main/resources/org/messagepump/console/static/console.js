// messagepump console: confirmations before actions, live numbers and sparklines (polling).
// No framework, no build: served as is by ConsoleServlet.
(function () {
  "use strict";
  var base = document.body.getAttribute("data-base") || "";

  // Every action asks first; guarded ones need the handler key typed again.
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    var submitter = ev.submitter || null;
    var typed = form.querySelectorAll("input[data-must-equal]");
    for (var i = 0; i < typed.length; i++) {
      if (typed[i].value !== typed[i].getAttribute("data-must-equal")) {
        ev.preventDefault();
        window.alert("Type the handler key exactly to confirm.");
        return;
      }
    }
    if (form.id === "bulk" && !document.querySelector("input[form=bulk]:checked")) {
      ev.preventDefault();
      window.alert("Select dead letters first.");
      return;
    }
    var question = (submitter && submitter.getAttribute("data-confirm")) || form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      ev.preventDefault();
    }
  });

  // While a retried command waits in the queue or runs under a lease, refresh to show it handled.
  if (document.querySelector("#retried tr[data-state=waiting], #retried tr[data-state=leased]")) {
    window.setTimeout(function () { window.location.replace(window.location.pathname); }, 1500);
  }

  var charts = document.querySelectorAll("svg[data-series]");
  var values = document.querySelectorAll("[data-value]");
  if (!charts.length && !values.length) {
    return;
  }

  function fmt(v) {
    if (v === null || v === undefined) { return "…"; }
    return Math.abs(v - Math.round(v)) < 1e-9 ? String(Math.round(v)) : v.toFixed(1);
  }

  function draw(svg, data) {
    var line = svg.querySelector("polyline");
    var pts = [];
    var max = 0;
    data.forEach(function (v) { if (v !== null && v > max) { max = v; } });
    var n = data.length;
    data.forEach(function (v, i) {
      if (v === null) { return; }
      var x = n < 2 ? 120 : (i * 120) / (n - 1);
      var y = max === 0 ? 23 : 23 - (v / max) * 21;
      pts.push(x.toFixed(1) + "," + y.toFixed(1));
    });
    line.setAttribute("points", pts.join(" "));
    svg.setAttribute("data-points", String(pts.length));
  }

  function poll() {
    fetch(base + "/api/overview", { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) {
        if (!d) { return; }
        charts.forEach(function (svg) {
          var s = d.series[svg.getAttribute("data-series")];
          if (s) { draw(svg, s); }
        });
        values.forEach(function (el) {
          var s = d.series[el.getAttribute("data-value")];
          if (s && s.length) { el.textContent = fmt(s[s.length - 1]); }
        });
      })
      .catch(function () { /* the next poll tries again */ })
      .finally(function () { window.setTimeout(poll, 2000); });
  }
  poll();
})();
