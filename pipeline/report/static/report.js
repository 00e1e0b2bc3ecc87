/* Price-history charts of the GPU price board, one Chart.js chart per GPU drawn from the JSON embedded in the page
   (no network): per day the cheapest on-demand $/GPU-hour across providers as a line, the spread up to the dearest
   provider's cheapest as a band, the cheapest spot/marketplace price dashed; each provider's own line is drawn
   only when asked ("Show each provider"). A line joins two days only when the providers are the same and no
   observed day lies between them (null points break it); a day whose providers differ from the day before is a
   triangle, its tooltip says which came and went. Numbers and dates follow the page language. */
(function () {
  "use strict";
  var lang = document.documentElement.lang || "en";
  var money = new Intl.NumberFormat(lang, { style: "currency", currency: "USD", minimumFractionDigits: 2 });
  var day = new Intl.DateTimeFormat(lang, { year: "numeric", month: "short", day: "numeric", timeZone: "UTC" });
  var palette = ["#7c3aed", "#059669", "#d97706", "#0891b2", "#db2777", "#65a30d", "#475569", "#ea580c",
                 "#4f46e5", "#0d9488", "#b91c1c", "#a16207", "#9333ea", "#0284c7", "#dc2626", "#16a34a"];
  var data = JSON.parse(document.getElementById("chart-data").textContent);
  window.vramlabCharts = [];
  document.querySelectorAll("canvas[data-gpu]").forEach(function (canvas) {
    var h = data[canvas.dataset.gpu];
    if (!h) { return; }
    var xs = [];
    [h.cheapest, h.spot].forEach(function (points) {
      points.forEach(function (p) { if (p.y !== null) { xs.push(p.x); } });
    });
    var lo = Math.min.apply(null, xs), hi = Math.max.apply(null, xs);
    // ticks on whole UTC days (points sit at 00:00 UTC of their day): a day either side, at most ~6 labels, each
    // label a different day, so a one-day chart shows its day once, under its point
    var DAY = 86400000, span = Math.round((hi - lo) / DAY);
    var step = Math.max(1, Math.ceil((span + 2) / 6)) * DAY;
    var min = lo - step, max = hi + step;
    var marked = function (ctx) { return ctx.raw && ctx.raw.changed; };
    var datasets = [
      { label: h.labels.high, role: "high", data: h.high, borderColor: "rgba(37,99,235,0.25)", borderWidth: 1,
        backgroundColor: "rgba(37,99,235,0.12)", pointRadius: 0, fill: "+1", tension: 0 },
      { label: h.labels.cheapest, role: "cheapest", data: h.cheapest, borderColor: "#2563eb",
        backgroundColor: "#2563eb", borderWidth: 2.5, tension: 0, spanGaps: false,
        pointStyle: function (ctx) { return marked(ctx) ? "triangle" : "circle"; },
        pointRadius: function (ctx) { return marked(ctx) ? 7 : 3; } }
    ];
    if (h.spot.length) {
      datasets.push({ label: h.labels.spot, role: "spot", data: h.spot, borderColor: "#64748b",
                      backgroundColor: "#64748b", borderDash: [6, 4], borderWidth: 2, tension: 0, spanGaps: false,
                      pointStyle: function (ctx) { return marked(ctx) ? "triangle" : "circle"; },
                      pointRadius: function (ctx) { return marked(ctx) ? 6 : 2.5; } });
    }
    h.providers.forEach(function (p, i) {
      datasets.push({ label: p.provider, role: "provider", data: p.points, hidden: true, borderWidth: 1.2,
                      borderColor: palette[i % palette.length], backgroundColor: palette[i % palette.length],
                      pointRadius: 2, tension: 0 });
    });
    var chart = new Chart(canvas, {
      type: "line",
      data: { datasets: datasets },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false, parsing: false,
        interaction: { mode: "nearest", intersect: false },
        scales: {
          x: { type: "linear", min: min, max: max,
               afterBuildTicks: function (axis) {
                 var ticks = [];
                 for (var v = min; v <= max; v += step) { ticks.push({ value: v }); }
                 axis.ticks = ticks;
               },
               ticks: { callback: function (v) { return day.format(new Date(v)); } } },
          y: { beginAtZero: false, ticks: { callback: function (v) { return money.format(v); } },
               title: { display: true, text: "$ / GPU-h" } }
        },
        plugins: {
          legend: { position: "bottom", labels: {
            usePointStyle: true, pointStyle: "circle", boxWidth: 8, boxHeight: 8,
            filter: function (item, chartData) {  // providers appear in the legend only once shown
              var ds = chartData.datasets[item.datasetIndex];
              return ds.role !== "provider" || !ds.hidden;
            } } },
          tooltip: { callbacks: {
            title: function (items) { return items.length ? day.format(new Date(items[0].parsed.x)) : ""; },
            label: function (item) {
              var p = item.raw && item.raw.provider ? " (" + item.raw.provider + ")" : "";
              return item.dataset.label + ": " + money.format(item.parsed.y) + p;
            },
            afterLabel: function (item) {
              var r = item.raw;
              if (!r || r.providers === undefined) { return ""; }
              var text = h.labels.providers + ": " + r.providers;
              if (r.changed) {
                var diff = r.added.map(function (p) { return "+" + p; })
                  .concat(r.removed.map(function (p) { return "\u2212" + p; }));
                text += " \u00b7 " + h.labels.changed + " (" + diff.join(" ") + ")";
              }
              return text;
            } } }
        }
      }
    });
    window.vramlabCharts.push(chart);
  });
  document.querySelectorAll("button.show-providers").forEach(function (button) {
    button.addEventListener("click", function () {
      var chart = window.vramlabCharts.find(function (c) { return c.canvas.dataset.gpu === button.dataset.gpu; });
      var show = button.getAttribute("aria-pressed") !== "true";
      chart.data.datasets.forEach(function (ds) { if (ds.role === "provider") { ds.hidden = !show; } });
      button.setAttribute("aria-pressed", String(show));
      chart.update();
    });
  });
})();
