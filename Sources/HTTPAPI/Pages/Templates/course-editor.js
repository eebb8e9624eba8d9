// /me/runs/new and /me/runs/{id}: the course editor (me-run.mustache). The course is a list of
// points on a Leaflet map: a click adds the next one, a drag moves one, the length (haversine,
// as the server measures it) is shown as it changes; a GPX, TCX or FIT file is read by the server
// (POST /me/runs/course) and drawn here to edit. On submit the points go in the form's `path`
// field as GeoJSON coordinates, and the local dates and times as RFC 3339 instants.
"use strict";
(() => {
  const form = document.getElementById("run-form");
  if (!form) return;
  const csrf = form.elements.csrf.value;
  const pathField = document.getElementById("path");
  const lengthOutput = document.getElementById("course-length");
  const countOutput = document.getElementById("course-points");
  const status = document.getElementById("course-file-status");

  // Local date-time inputs ↔ the hidden RFC 3339 fields.
  const pad = (n) => String(n).padStart(2, "0");
  for (const input of form.querySelectorAll("[data-iso-field]")) {
    const hidden = document.getElementById(input.dataset.isoField);
    const date = hidden.value ? new Date(hidden.value) : null;
    if (date && !isNaN(date)) {
      input.value = date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) + "T" + pad(date.getHours()) + ":" + pad(date.getMinutes());
    }
  }

  let points = [];  // [latitude, longitude]
  try {
    points = JSON.parse(pathField.value || "[]").map((c) => [c[1], c[0]]);
  } catch (error) {
    points = [];
  }

  function metres(a, b) {
    const radians = Math.PI / 180, earth = 6371008.8;
    const dLat = (b[0] - a[0]) * radians, dLon = (b[1] - a[1]) * radians;
    const h = Math.sin(dLat / 2) ** 2 + Math.cos(a[0] * radians) * Math.cos(b[0] * radians) * Math.sin(dLon / 2) ** 2;
    return 2 * earth * Math.asin(Math.min(1, Math.sqrt(h)));
  }

  function showLength() {
    let total = 0;
    for (let i = 1; i < points.length; i++) total += metres(points[i - 1], points[i]);
    lengthOutput.value = (total / 1000).toFixed(2) + " km";
    lengthOutput.dataset.metres = total.toFixed(1);
    countOutput.textContent = String(points.length);
    pathField.value = JSON.stringify(points.map((p) => [Number(p[1].toFixed(6)), Number(p[0].toFixed(6))]));
  }

  const element = document.getElementById("course-map");
  let map = null, line = null, markers = [], draggedAt = 0;
  if (typeof window.L !== "undefined" && !element.hidden) {
    map = L.map(element, { zoomSnap: 0.25, doubleClickZoom: false });
    if (element.dataset.tileUrl) {
      L.tileLayer(element.dataset.tileUrl, { attribution: element.dataset.attribution || "", maxZoom: 19 }).addTo(map);
    }
    line = L.polyline([], { color: "#0969da", weight: 4 }).addTo(map);
    map.on("click", (event) => {
      // The mouse-up that ends a point's drag is not a new point.
      if (Date.now() - draggedAt < 400 || event.originalEvent.target.closest(".course-point")) return;
      points.push([event.latlng.lat, event.latlng.lng]);
      redraw();
    });
  }

  // Every point a draggable marker; the line and the length follow a drag as it happens.
  function redraw(fit) {
    showLength();
    if (!map) return;
    // The view first: Leaflet adds layers to a map only once it has one.
    if (fit && points.length > 1) map.fitBounds(L.latLngBounds(points), { padding: [24, 24] });
    else if (fit && points.length === 1) map.setView(points[0], 16);
    line.setLatLngs(points);
    for (const marker of markers) marker.remove();
    markers = points.map((point, index) => {
      const marker = L.marker(point, {
        draggable: true, keyboard: false, title: "Point " + (index + 1),
        icon: L.divIcon({ className: "course-point" + (index === 0 ? " first" : ""), iconSize: [14, 14] }),
      }).addTo(map);
      marker.getElement().dataset.point = String(index);
      marker.on("drag", () => {
        const at = marker.getLatLng();
        points[index] = [at.lat, at.lng];
        line.setLatLngs(points);
        showLength();
      });
      marker.on("dragend", () => { draggedAt = Date.now(); });
      return marker;
    });
  }

  if (map) {
    if (points.length) redraw(true); else map.setView([45.4642, 9.19], 13);  // Milan, until a course is drawn
  } else {
    showLength();
  }

  document.getElementById("undo-point").addEventListener("click", () => { points.pop(); redraw(); });
  document.getElementById("clear-course").addEventListener("click", () => { points = []; redraw(); });

  // A course file: read by the server, drawn here.
  const types = { gpx: "application/gpx+xml", tcx: "application/vnd.garmin.tcx+xml", fit: "application/vnd.ant.fit" };
  document.getElementById("course-file").addEventListener("change", (event) => {
    const file = event.target.files[0];
    if (!file) return;
    const type = types[(file.name.split(".").pop() || "").toLowerCase()];
    if (!type) { status.textContent = "Choose a .gpx, .tcx or .fit file."; return; }
    status.textContent = "Reading " + file.name + "…";
    fetch("/me/runs/course", { method: "POST", credentials: "same-origin", headers: { "Content-Type": type, "X-CSRF-Token": csrf, Accept: "application/json" }, body: file })
      .then((response) => response.json().then((body) => ({ ok: response.ok, body })))
      .then(({ ok, body }) => {
        if (!ok) { status.textContent = (body.errors && body.errors[0] ? body.errors[0].message : body.detail) || "The file was refused."; return; }
        points = body.coordinates.map((c) => [c[1], c[0]]);
        redraw(true);
        status.textContent = file.name + ": " + points.length + " points, " + (body.lengthMeters / 1000).toFixed(2) + " km.";
      })
      .catch(() => { status.textContent = "The file could not be sent."; });
  });

  form.addEventListener("submit", () => {
    for (const input of form.querySelectorAll("[data-iso-field]")) {
      const date = input.value ? new Date(input.value) : null;
      document.getElementById(input.dataset.isoField).value = date && !isNaN(date) ? date.toISOString() : "";
    }
    showLength();
  });
})();
