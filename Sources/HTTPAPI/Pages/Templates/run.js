// The spectators' page (run.mustache): served as /assets/run.js so the page's CSP allows no inline script.
"use strict";
(function () {
  const runId = document.querySelector("main[data-run-id]").dataset.runId;
  const runners = new Map();
  let project = null;

  // Fits the course into the 1000 × 1000 view box (equirectangular around its centre).
  function fit(coordinates) {
    const lats = coordinates.map(c => c[1]), lons = coordinates.map(c => c[0]);
    const midLat = (Math.min(...lats) + Math.max(...lats)) / 2;
    const k = Math.cos(midLat * Math.PI / 180);
    const xs = lons.map(l => l * k), ys = lats;
    const minX = Math.min(...xs), maxX = Math.max(...xs), minY = Math.min(...ys), maxY = Math.max(...ys);
    const span = Math.max(maxX - minX, maxY - minY) || 1e-6;
    const scale = 900 / span;
    const offX = 50 + (900 - (maxX - minX) * scale) / 2, offY = 50 + (900 - (maxY - minY) * scale) / 2;
    return (lon, lat) => [offX + (lon * k - minX) * scale, offY + (maxY - lat) * scale];
  }

  function drawCourse(run) {
    project = fit(run.path.coordinates);
    document.getElementById("path").setAttribute("points", run.path.coordinates.map(c => project(c[0], c[1]).join(",")).join(" "));
    document.getElementById("title").textContent = run.name;
  }

  function pace(seconds) {
    if (seconds == null) return "–";
    return Math.floor(seconds / 60) + ":" + String(Math.round(seconds % 60)).padStart(2, "0") + "/km";
  }

  function render() {
    const layer = document.getElementById("runners");
    for (const state of runners.values()) {
      if (state.latitude == null || !project) continue;
      let marker = layer.querySelector('[data-runner="' + state.runnerId + '"]');
      if (!marker) {
        marker = document.createElementNS("http://www.w3.org/2000/svg", "g");
        marker.setAttribute("data-runner", state.runnerId);
        marker.innerHTML = '<circle r="9"></circle><text x="12" y="4"></text>';
        layer.appendChild(marker);
      }
      const [x, y] = project(state.longitude, state.latitude);
      marker.querySelector("circle").setAttribute("cx", x.toFixed(1));
      marker.querySelector("circle").setAttribute("cy", y.toFixed(1));
      marker.querySelector("text").setAttribute("transform", "translate(" + x.toFixed(1) + " " + y.toFixed(1) + ")");
      marker.querySelector("text").textContent = state.displayName;
      marker.setAttribute("class", "runner" + (state.finished ? " finished" : "") + (state.offCourse ? " off" : ""));
    }
    const rows = [...runners.values()].sort((a, b) => (a.rank || 1e9) - (b.rank || 1e9));
    const body = document.getElementById("leaderboard");
    body.replaceChildren(...rows.map(state => {
      const row = document.createElement("tr");
      row.setAttribute("data-runner", state.runnerId);
      for (const text of [state.rank ?? "–", state.displayName + (state.finished ? " ✓" : ""), (state.distanceMeters / 1000).toFixed(2), pace(state.paceSecondsPerKm)]) {
        const cell = document.createElement("td");
        cell.textContent = text;
        row.appendChild(cell);
      }
      return row;
    }));
  }

  let delay = 500;
  function connect() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(scheme + "//" + location.host + "/api/runs/" + runId + "/live");
    const status = document.getElementById("status");
    socket.onopen = () => { delay = 500; status.textContent = "Live"; };
    socket.onmessage = (message) => {
      const data = JSON.parse(message.data);
      if (data.type === "snapshot") {
        runners.clear();
        drawCourse(data.run);
      }
      for (const state of data.runners || []) runners.set(state.runnerId, state);
      for (const entry of data.ranks || []) {
        const state = runners.get(entry.runnerId);
        if (state) state.rank = entry.rank;
      }
      render();
    };
    socket.onclose = () => {
      status.textContent = "Reconnecting…";
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 10000);
    };
  }
  connect();
})();
