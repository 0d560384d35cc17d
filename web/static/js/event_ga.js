// The event page's general-admission tiers: "N left" kept current by polling the
// public event document (GET /api/events/{id}, ga_tiers[].available) every few
// seconds, and the quantity picked per tier remembered for the seat page
// (sessionStorage, onsale.ga.<event id>), which holds them once the shopper is
// through the queue.

const POLL_MS = 3000;
const article = document.querySelector("article.event");
const eventId = article.dataset.eventId;
const KEY = `onsale.ga.${eventId}`;

function remembered() {
  try { return JSON.parse(sessionStorage.getItem(KEY) || "{}"); } catch { return {}; }
}

function remember() {
  const picked = {};
  for (const select of document.querySelectorAll("[data-ga-pick]")) picked[select.dataset.gaPick] = Number(select.value);
  sessionStorage.setItem(KEY, JSON.stringify(picked));
}

async function refresh() {
  try {
    const response = await fetch(`/api/events/${eventId}`, { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    const doc = await response.json();
    for (const tier of doc.ga_tiers || []) {
      const cell = document.querySelector(`[data-ga-left="${tier.tier_id}"]`);
      if (cell) cell.textContent = tier.available.toLocaleString("en");
    }
  } catch { /* offline for a moment: the next poll tries again */ }
}

const picked = remembered();
for (const select of document.querySelectorAll("[data-ga-pick]")) {
  if (picked[select.dataset.gaPick]) select.value = String(picked[select.dataset.gaPick]);
  select.addEventListener("change", remember);
}
remember();
setInterval(refresh, POLL_MS);
