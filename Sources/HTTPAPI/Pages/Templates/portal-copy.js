// Copy buttons of the portal (portal-copy.mustache): served as /assets/portal-copy.js (no inline script under the CSP).
"use strict";
for (const button of document.querySelectorAll("[data-copy]")) {
  button.addEventListener("click", async () => {
    const text = document.getElementById(button.dataset.copy).textContent;
    const status = document.getElementById("copy-status");
    try { await navigator.clipboard.writeText(text); status.textContent = "Copied."; }
    catch { status.textContent = "Select the text and copy it."; }
  });
}
