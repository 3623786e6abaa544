/* The console's charts: each element with data-chart reads its JSON from the <script
   type="application/json"> named by data-source and draws it with uPlot. After drawing, the
   element's data-drawn attribute holds the number of points of its main series (the browser
   tests read it). No other script runs on the pages. */
(function () {
  "use strict";
  var COLORS = ["#1f6feb", "#d97706", "#059669", "#9333ea", "#dc2626", "#0891b2", "#4b5563"];
  window.pooltuneCharts = {};

  function width(el) { return Math.max(320, Math.min(el.clientWidth || 900, 1100)); }

  function countPoints(values) {
    var n = 0;
    for (var i = 0; i < values.length; i++) { if (values[i] !== null && values[i] !== undefined) n++; }
    return n;
  }

  function markDrawn(el, mainSeries) {
    return function (u) { el.setAttribute("data-drawn", String(countPoints(u.data[mainSeries]))); };
  }

  function points(label, color, size) {
    return { label: label, stroke: color, fill: color, scale: "y", paths: function () { return null; },
             points: { show: true, size: size, stroke: color, fill: color } };
  }

  function trace(el, d) {
    var opts = {
      width: width(el), height: 320,
      scales: { x: { time: false }, size: { auto: true } },
      axes: [
        { label: "seconds since the climb started" },
        { label: "throughput /s", scale: "y" },
        { label: d.size_knob, scale: "size", side: 1, grid: { show: false } }
      ],
      series: [
        { label: "t (s)" },
        { label: "throughput", stroke: COLORS[0], width: 1.5, scale: "y" },
        { label: d.size_knob, stroke: COLORS[1], width: 1.5, scale: "size",
          paths: uPlot.paths.stepped({ align: 1 }) },
        points("knob change", "#111827", 5),
        points("rollback", "#dc2626", 9)
      ],
      hooks: { draw: [markDrawn(el, 1)] }
    };
    return new uPlot(opts, [d.t, d.throughput, d.size, d.moves, d.rollbacks], el);
  }

  function curve(el, d) {
    var opts = {
      width: width(el), height: 280,
      scales: { x: { time: false, distr: 3, log: 2 } },
      axes: [{ label: d.size_knob + " (log scale)" }, { label: "mean throughput /s" }],
      series: [
        { label: d.size_knob },
        { label: d.kind === "sweep" ? "swept" : "visited", stroke: COLORS[2], width: 2,
          points: { show: true, size: 7 } }
      ],
      hooks: { draw: [markDrawn(el, 1)] }
    };
    return new uPlot(opts, [d.sizes, d.throughput], el);
  }

  function cdf(el, d) {
    var names = Object.keys(d.series);
    var series = [{ label: "regret" }];
    var data = [d.x];
    names.forEach(function (name, i) {
      series.push({ label: name, stroke: COLORS[i % COLORS.length], width: 1.5,
                    paths: uPlot.paths.stepped({ align: 1 }) });
      data.push(d.series[name]);
    });
    var opts = {
      width: width(el), height: 300, scales: { x: { time: false }, y: { range: [0, 1] } },
      axes: [{ label: "throughput regret" }, { label: "share of workloads ≤ regret" }],
      series: series, hooks: { draw: [markDrawn(el, 0)] }
    };
    return new uPlot(opts, data, el);
  }

  function predictedVsBest(el, d) {
    var best = d.best || [];
    var order = best.map(function (_, i) { return i; }).sort(function (a, b) { return best[a] - best[b]; });
    var names = Object.keys(d.predicted || {});
    var series = [{ label: "best size" }];
    var data = [order.map(function (i) { return best[i]; })];
    names.forEach(function (name, k) {
      series.push(points(name, COLORS[k % COLORS.length], 4));
      data.push(order.map(function (i) { return d.predicted[name][i]; }));
    });
    var opts = {
      width: width(el), height: 320,
      scales: { x: { time: false, distr: 3, log: 2 }, y: { distr: 3, log: 2 } },
      axes: [{ label: "best pool size" }, { label: "predicted pool size" }],
      series: series, hooks: { draw: [markDrawn(el, 0)] }
    };
    return new uPlot(opts, data, el);
  }

  var BUILDERS = { trace: trace, curve: curve, cdf: cdf, pvb: predictedVsBest };

  function draw() {
    var charts = document.querySelectorAll("[data-chart]");
    for (var i = 0; i < charts.length; i++) {
      var el = charts[i];
      var source = document.getElementById(el.getAttribute("data-source"));
      var build = BUILDERS[el.getAttribute("data-chart")];
      if (!source || !build || typeof uPlot === "undefined") { el.setAttribute("data-drawn", "error"); continue; }
      try {
        window.pooltuneCharts[el.id] = build(el, JSON.parse(source.textContent));
      } catch (err) {
        el.setAttribute("data-drawn", "error");
        el.textContent = "The chart could not be drawn: " + err;
      }
    }
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", draw); } else { draw(); }
})();
