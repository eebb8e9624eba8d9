// /me/imports: sends the chosen file as it is (the Content-Type from its extension), shows the
// upload's progress, then follows the import as the server reads it.
(() => {
  const form = document.getElementById('import-form');
  if (!form) return;
  const types = { zip: 'application/zip', xml: 'application/xml', gpx: 'application/gpx+xml', tcx: 'application/vnd.garmin.tcx+xml', fit: 'application/vnd.ant.fit' };
  const box = document.getElementById('import-progress');
  const upload = document.getElementById('upload-progress');
  const reading = document.getElementById('processing-progress');
  const state = document.getElementById('import-state');
  const rows = document.querySelector('#import-result tbody');
  const final = ['done', 'failed', 'cancelled'];

  function show(job) {
    const records = job.records.toLocaleString();
    state.textContent = job.state === 'failed' ? 'Failed: ' + job.failure
      : job.state === 'done' ? 'Done: ' + records + ' records read.'
      : job.state === 'cancelled' ? 'Cancelled.' : 'Reading… ' + records + ' records so far.';
    state.dataset.state = job.state;
    if (final.includes(job.state)) {
      reading.value = 100;
    } else if (job.format === 'apple-health-zip') {
      reading.removeAttribute('value');   // inflated bytes against compressed ones: no honest fraction
    } else if (job.bytesReceived > 0) {
      reading.value = Math.min(99, Math.floor(100 * job.bytesProcessed / job.bytesReceived));
    }
    rows.replaceChildren(...Object.entries(job.result.types).sort().map(([name, counts]) => {
      const row = document.createElement('tr');
      for (const text of [name, counts.accepted.toLocaleString(), counts.duplicates.toLocaleString()]) {
        const cell = document.createElement('td');
        cell.textContent = text;
        row.append(cell);
      }
      return row;
    }));
  }

  function follow(id) {
    fetch('/me/imports/' + encodeURIComponent(id) + '/status', { credentials: 'same-origin', headers: { Accept: 'application/json' } })
      .then((response) => { if (!response.ok) throw new Error(String(response.status)); return response.json(); })
      .then((job) => { show(job); if (!final.includes(job.state)) setTimeout(() => follow(id), 700); })
      .catch(() => setTimeout(() => follow(id), 2000));
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const file = form.elements.file.files[0];
    if (!file) return;
    const type = types[file.name.split('.').pop().toLowerCase()];
    box.hidden = false;
    if (!type) {
      state.textContent = 'Choose an export.zip or export.xml, or a GPX, TCX or FIT file.';
      return;
    }
    upload.value = 0;
    reading.value = 0;
    rows.replaceChildren();
    state.textContent = 'Uploading…';
    const request = new XMLHttpRequest();
    request.open('POST', form.action);
    request.setRequestHeader('Content-Type', type);
    request.setRequestHeader('X-CSRF-Token', form.dataset.csrf);
    request.upload.onprogress = (progress) => { if (progress.lengthComputable) upload.value = Math.floor(100 * progress.loaded / progress.total); };
    request.onload = () => {
      if (request.status !== 201 && request.status !== 202) {
        state.textContent = 'The upload was refused (' + request.status + ').';
        return;
      }
      upload.value = 100;
      const job = JSON.parse(request.responseText);
      show(job);
      follow(job.id);
    };
    request.onerror = () => { state.textContent = 'The upload was cut off: choose the file and try again.'; };
    request.send(file);
  });
})();
