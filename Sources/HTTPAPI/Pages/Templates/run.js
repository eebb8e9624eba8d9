// The spectators' page (run.mustache): served as /assets/run.js so the page's CSP allows no inline script.
"use strict";
(function () {
  const main = document.querySelector("main[data-run-id]");
  const runId = main.dataset.runId;
  // With MAP_TILE_URL set (and Leaflet served), the course and runners go on a map of tiles;
  // otherwise on the plain SVG drawing.
  const tileURL = main.dataset.tileUrl || "";
  let map = null, courseLine = null;
  const markers = new Map();  // runnerId → Leaflet circle marker
  const onMap = () => tileURL !== "" && typeof window.L !== "undefined";
  // Version 2 of the live protocol (see LiveCompact.swift): runners by index, states as arrays
  // [index, lat×1e5, lon×1e5, metres, tenths of a second since epoch, pace s/km (0: unknown), flags].
  let runners = new Map();  // index → { runnerId, displayName, latitude, longitude, … }
  let run = null, epoch = 0;
  let order = [];  // every index, leader first, as of the last message that brought the whole field
  // What the next render redraws: the runners (indices) whose state changed, and their markers.
  // A city race has thousands of runners and a few messages a second: the page redraws only the
  // changed markers and the leaderboard's top rows, once per frame.
  const dirty = new Set();
  const shapes = new Map();  // runnerId → the SVG marker (without tiles): { group, circle, text }
  let renderDue = false, redraw = false;
  // The leaderboard's rows: the leaders down to this place, then the followed runners below it.
  const boardRows = 100;
  let project = null;
  const query = new URLSearchParams(location.search);
  const followed = new Set((query.get("follow") || "").split(",").filter(Boolean));
  const fieldEveryMs = query.get("fieldEveryMs");

  function applyState(numbers) {
    const state = runners.get(numbers[0]);
    if (!state) return;  // a runner the next snapshot will introduce
    dirty.add(numbers[0]);
    state.latitude = numbers[1] / 1e5;
    state.longitude = numbers[2] / 1e5;
    state.distanceMeters = numbers[3];
    state.time = epoch + numbers[4] * 100;
    state.paceSecondsPerKm = numbers[5] || null;
    state.offCourse = (numbers[6] & 1) !== 0;
    state.finished = (numbers[6] & 2) !== 0;
    // The estimated finish: the time of the fix plus the rest of the course at the runner's pace.
    state.estimatedFinish = state.finished || !state.paceSecondsPerKm ? null
      : state.time + state.paceSecondsPerKm * Math.max(0, run.lengthMeters - state.distanceMeters);
  }

  function follow(runnerId) {
    if (followed.has(runnerId)) followed.delete(runnerId); else if (followed.size < 50) followed.add(runnerId);
    const next = new URLSearchParams(location.search);
    if (followed.size) next.set("follow", [...followed].join(",")); else next.delete("follow");
    history.replaceState(null, "", location.pathname + (next.toString() ? "?" + next : ""));
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ follow: [...followed] }));
    for (const [index, state] of runners) if (state.runnerId === runnerId) dirty.add(index);
    render();
  }

  // One render per frame, however many messages came in it.
  function scheduleRender() {
    if (renderDue) return;
    renderDue = true;
    requestAnimationFrame(() => { renderDue = false; render(); });
  }

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
    if (onMap()) {
      document.getElementById("title").textContent = run.name;
      if (!map) {
        document.getElementById("course").setAttribute("hidden", "");
        const element = document.getElementById("leaflet");
        element.hidden = false;
        map = L.map(element, { zoomSnap: 0.25 });
        L.tileLayer(tileURL, { attribution: main.dataset.attribution || "", maxZoom: 19 }).addTo(map);
      }
      if (courseLine) courseLine.remove();
      courseLine = L.polyline(run.path.coordinates.map(c => [c[1], c[0]]), { color: "#0969da", weight: 4 }).addTo(map);
      map.fitBounds(courseLine.getBounds(), { padding: [24, 24] });
      return;
    }
    project = fit(run.path.coordinates);
    document.getElementById("path").setAttribute("points", run.path.coordinates.map(c => project(c[0], c[1]).join(",")).join(" "));
    document.getElementById("title").textContent = run.name;
  }

  function pace(seconds) {
    if (seconds == null) return "–";
    return Math.floor(seconds / 60) + ":" + String(Math.round(seconds % 60)).padStart(2, "0") + "/km";
  }

  // A runner's dot on the map: red, green once finished, amber off course, purple when followed;
  // a click follows them. Names are always shown in a field of up to `labelledField` runners,
  // else for the followed runners only (the others' on hover): thousands of permanent labels
  // cover the map and cost the browser seconds to place. Style and label change only with the
  // runner's status, not at every move.
  const labelledField = 50;
  function placeOnMap(state) {
    let marker = markers.get(state.runnerId);
    if (!marker) {
      marker = L.circleMarker([state.latitude, state.longitude], { radius: 8, color: "#fff", weight: 2, fillOpacity: 1 }).addTo(map);
      marker.on("click", () => follow(state.runnerId));
      marker.getElement().setAttribute("data-runner", state.runnerId);
      marker.look = null;
      markers.set(state.runnerId, marker);
    }
    marker.setLatLng([state.latitude, state.longitude]);
    const followedNow = followed.has(state.runnerId);
    const look = (followedNow ? "followed" : state.finished ? "finished" : state.offCourse ? "off" : "running") + (runners.size <= labelledField || followedNow ? " labelled" : "");
    if (marker.look !== look) {
      const labelled = look.endsWith(" labelled");
      if (!marker.look || marker.look.endsWith(" labelled") !== labelled) {
        marker.unbindTooltip();
        marker.bindTooltip(state.displayName, { permanent: labelled, direction: "right", offset: [8, 0], className: "runner-name" });
      }
      marker.setStyle({ fillColor: followedNow ? "#8250df" : state.finished ? "#1a7f37" : state.offCourse ? "#9a6700" : "#cf222e", radius: followedNow ? 10 : 8 });
      if (followedNow) marker.bringToFront();
      marker.getElement().classList.toggle("followed", followedNow);
      marker.look = look;
    }
    const element = marker.getElement();
    element.dataset.latitude = state.latitude;
    element.dataset.longitude = state.longitude;
  }

  function render() {
    const layer = document.getElementById("runners");
    if (redraw) {
      // A snapshot: every marker anew (its runners' indices may have changed).
      redraw = false;
      layer.replaceChildren();
      shapes.clear();
      for (const marker of markers.values()) marker.remove();
      markers.clear();
      for (const index of runners.keys()) dirty.add(index);
    }
    for (const index of dirty) {
      const state = runners.get(index);
      if (!state || state.latitude == null) continue;
      if (map) { placeOnMap(state); continue; }
      if (!project) continue;
      let shape = shapes.get(state.runnerId);
      const isFollowed = followed.has(state.runnerId);
      if (!shape) {
        const group = document.createElementNS("http://www.w3.org/2000/svg", "g");
        group.setAttribute("data-runner", state.runnerId);
        group.innerHTML = '<circle r="9"></circle><text x="12" y="4"></text>';
        group.querySelector("text").textContent = state.displayName;
        layer.appendChild(group);
        shape = { group, circle: group.querySelector("circle"), text: group.querySelector("text") };
        shapes.set(state.runnerId, shape);
      }
      const marker = shape.group;
      const [x, y] = project(state.longitude, state.latitude);
      shape.circle.setAttribute("cx", x.toFixed(1));
      shape.circle.setAttribute("cy", y.toFixed(1));
      shape.text.setAttribute("transform", "translate(" + x.toFixed(1) + " " + y.toFixed(1) + ")");
      marker.setAttribute("class", "runner" + (state.finished ? " finished" : "") + (state.offCourse ? " off" : "") + (isFollowed ? " followed" : ""));
      marker.dataset.latitude = state.latitude;
      marker.dataset.longitude = state.longitude;
    }
    dirty.clear();
    // The leaders, then the followed runners further down (ranked), not thousands of rows.
    const shown = new Set(order.slice(0, boardRows));
    for (const [index, state] of runners) if (followed.has(state.runnerId) || !order.length) shown.add(index);
    const rows = [...shown].map(index => runners.get(index)).filter(Boolean).sort((a, b) => (a.rank || 1e9) - (b.rank || 1e9));
    const body = document.getElementById("leaderboard");
    const more = runners.size - rows.length;
    body.replaceChildren(...rows.map(state => {
      const row = document.createElement("tr");
      row.setAttribute("data-runner", state.runnerId);
      if (followed.has(state.runnerId)) row.className = "followed";
      const finish = state.estimatedFinish ? new Date(state.estimatedFinish).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : "–";
      for (const text of [state.rank ?? "–", state.displayName + (state.finished ? " ✓" : ""), (state.distanceMeters / 1000).toFixed(2), pace(state.paceSecondsPerKm), finish]) {
        const cell = document.createElement("td");
        cell.textContent = text;
        row.appendChild(cell);
      }
      const button = document.createElement("button");
      button.type = "button";
      button.className = "follow";
      button.textContent = followed.has(state.runnerId) ? "Unfollow" : "Follow";
      button.setAttribute("aria-label", button.textContent + " " + state.displayName);
      button.addEventListener("click", () => follow(state.runnerId));
      const cell = document.createElement("td");
      cell.appendChild(button);
      row.appendChild(cell);
      return row;
    }));
    if (more > 0) {
      const row = document.createElement("tr"), cell = document.createElement("td");
      cell.colSpan = 6;
      cell.className = "more";
      cell.textContent = "… and " + more + " more runners (follow one to keep them here)";
      row.appendChild(cell);
      body.appendChild(row);
    }
  }

  let delay = 500, socket = null;
  function connect() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const params = new URLSearchParams();
    if (followed.size) params.set("follow", [...followed].join(","));
    if (fieldEveryMs) params.set("fieldEveryMs", fieldEveryMs);
    socket = new WebSocket(scheme + "//" + location.host + "/api/runs/" + runId + "/live" + (params.toString() ? "?" + params : ""));
    const status = document.getElementById("status");
    socket.onopen = () => { delay = 500; status.textContent = "Live"; };
    socket.onmessage = (message) => {
      const data = JSON.parse(message.data);
      if (data.type === "snapshot") {
        // Every runner's index, name and state anew (a first connection, a reconnection, a new roster).
        run = data.run;
        epoch = data.epoch;
        runners = new Map(data.runners.map(([runnerId, displayName], index) => [index, { runnerId, displayName, latitude: null, distanceMeters: 0 }]));
        redraw = true;  // the markers go at the next render, not before: the page stays whole meanwhile
        drawCourse(data.run);
      } else if (data.type === "error") {
        status.textContent = data.detail;
        return;
      }
      for (const numbers of data.states || data.runners || []) applyState(numbers);
      // The order: whole (a snapshot, or a server that lost ours), or the fewest runners moved,
      // each with its new rank, leader first: take them all out, then put each at its rank.
      if (data.order) {
        order = data.order.slice();
      } else if (data.moves) {
        const moved = new Set();
        for (let i = 0; i + 1 < data.moves.length; i += 2) moved.add(data.moves[i]);
        const rest = order.filter((index) => !moved.has(index)), next = [];
        let kept = 0;
        for (let i = 0; i + 1 < data.moves.length; i += 2) {
          while (next.length < data.moves[i + 1] - 1 && kept < rest.length) next.push(rest[kept++]);
          next.push(data.moves[i]);
        }
        order = next.concat(rest.slice(kept));
      }
      if (data.order || data.moves) order.forEach((index, place) => { const state = runners.get(index); if (state) state.rank = place + 1; });
      // A follower's other messages: the followed runners' new ranks.
      const ranks = data.ranks || [];
      for (let i = 0; i + 1 < ranks.length; i += 2) {
        const state = runners.get(ranks[i]);
        if (state) state.rank = ranks[i + 1];
      }
      scheduleRender();
    };
    socket.onclose = () => {
      status.textContent = "Reconnecting…";
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 10000);
    };
  }
  connect();
})();
