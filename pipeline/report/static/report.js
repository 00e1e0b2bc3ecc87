/* Price-history charts of the GPU price board: one Chart.js line chart per GPU, one series per provider and price
   class, drawn from the JSON embedded in the page (no network). Numbers and dates follow the page language. */
(function () {
  "use strict";
  var lang = document.documentElement.lang || "en";
  var money = new Intl.NumberFormat(lang, { style: "currency", currency: "USD", minimumFractionDigits: 2 });
  var day = new Intl.DateTimeFormat(lang, { year: "numeric", month: "short", day: "numeric", timeZone: "UTC" });
  var palette = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d",
                 "#475569", "#ea580c", "#4f46e5", "#0d9488", "#b91c1c", "#a16207", "#9333ea", "#0284c7"];
  var data = JSON.parse(document.getElementById("chart-data").textContent);
  var providers = {};
  Object.keys(data).forEach(function (gpu) {
    data[gpu].forEach(function (s) { providers[s.label.split(" · ")[0]] = true; });
  });
  var colourOf = {};
  Object.keys(providers).sort().forEach(function (p, i) { colourOf[p] = palette[i % palette.length]; });
  window.vramlabCharts = [];
  document.querySelectorAll("canvas[data-gpu]").forEach(function (canvas) {
    var series = data[canvas.dataset.gpu] || [];
    var xs = [];
    series.forEach(function (s) { s.points.forEach(function (p) { xs.push(p.x); }); });
    var lo = Math.min.apply(null, xs), hi = Math.max.apply(null, xs);
    var pad = Math.max((hi - lo) * 0.04, 86400000);  // at least a day either side, so single points show
    var chart = new Chart(canvas, {
      type: "line",
      data: {
        datasets: series.map(function (s) {
          var colour = colourOf[s.label.split(" · ")[0]];
          return { label: s.label, data: s.points, borderColor: colour, backgroundColor: colour,
                   borderDash: s.dashed ? [6, 4] : [], borderWidth: 2, pointRadius: 3.5, tension: 0 };
        })
      },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false, parsing: false,
        interaction: { mode: "nearest", intersect: false },
        scales: {
          x: { type: "linear", min: lo - pad, max: hi + pad,
               ticks: { maxTicksLimit: 6, callback: function (v) { return day.format(new Date(v)); } } },
          y: { beginAtZero: false, ticks: { callback: function (v) { return money.format(v); } },
               title: { display: true, text: "$ / GPU-h" } }
        },
        plugins: {
          legend: { position: "bottom", labels: { usePointStyle: true, pointStyle: "circle", boxWidth: 8, boxHeight: 8 } },
          tooltip: { callbacks: {
            title: function (items) { return items.length ? day.format(new Date(items[0].parsed.x)) : ""; },
            label: function (item) { return item.dataset.label + ": " + money.format(item.parsed.y); } } }
        }
      }
    });
    window.vramlabCharts.push(chart);
  });
})();
