// The fairness lab: describe a crowd (a shape, counts per second, or an uploaded CSV of
// join times), simulate FIFO and a random draw on the server (POST /api/ops/fairness,
// edge/fairness.py, in the edge's lab worker process), draw what each policy does to
// waits by arrival cohort and to who reaches the seats, and offer the run's files
// (the CSV, JSON and charts `onsale fairness sweep` writes) as downloads.

import { flash } from "./api.js";
import { barChart, COLORS, formatNumber, histogram, lineChart } from "./charts.js";
import { explain, initNav, opsApi, requireToken } from "./ops.js";

const LABELS = { fifo: "FIFO", random: "Random draw" };
const NUMBERS = ["visitors", "seconds", "onsale_second", "seats", "tickets_per_account",
                 "tickets_per_human", "bot_devices", "rate_min", "rate_max", "active_cap",
                 "session_seconds", "seed"];

const minutes = v => `${formatNumber(v / 60, 1)}`;

// The request body from the form: the arrival profile is a preset, or the
// counts per second pasted by the operator (commas, spaces or new lines).
export function scenarioFromForm(form) {
  return scenarioFrom(new FormData(form));
}

// The same from the form's fields (a FormData, or anything with its get()): pure,
// tested without a browser (tests/js/console.test.js).
export function scenarioFrom(data) {
  const body = {};
  const event = data.get("event_id");
  if (event) body.event_id = Number(event);
  const counts = String(data.get("arrivals") || "").trim();
  if (data.get("profile") === "counts" && counts) {
    body.arrivals = counts.split(/[\s,;]+/).filter(Boolean).map(Number);
  } else {
    body.preset = data.get("preset");
  }
  for (const name of NUMBERS) {
    const raw = String(data.get(name) ?? "").trim();
    if (raw === "") continue;
    if (body.arrivals && (name === "visitors" || name === "seconds")) continue;
    body[name] = Number(raw);
  }
  body.bot_share = Number(data.get("bot_share_percent") || 0) / 100;
  body.dedupe_accounts = data.get("dedupe_accounts") === "on";
  return body;
}

// The query of a run on an uploaded CSV: the settings but the crowd's own (its size,
// span and opening come from the file and `opens_at`), as the route's query parameters.
export function uploadQuery(data) {
  const body = scenarioFrom(data);
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(body)) {
    if (["arrivals", "preset", "visitors", "seconds", "onsale_second"].includes(name)) continue;
    query.set(name, String(value));
  }
  const opens = String(data.get("opens_at") || "").trim();
  if (opens) query.set("opens_at", opens);
  return query;
}

const DOWNLOADS = [
  ["summary.csv", "Summary (CSV)"],
  ["cohorts.csv", "Cohorts (CSV)"],
  ["results.json", "Whole result (JSON)"],
  ["waits.png", "Waits chart (PNG)"],
  ["bots.png", "Bots chart (PNG)"],
];

// One file of the answer (`files`, edge/fairness_lab.py) as a Blob.
export function fileBlob({ media_type: type, encoding, content }) {
  if (encoding !== "base64") return new Blob([content], { type });
  const bytes = Uint8Array.from(atob(content), c => c.charCodeAt(0));
  return new Blob([bytes], { type });
}

let links = [];

function offerDownloads(files) {
  for (const url of links) URL.revokeObjectURL(url);
  links = [];
  const items = DOWNLOADS.filter(([name]) => files && files[name]).map(([name, label]) => {
    const url = URL.createObjectURL(fileBlob(files[name]));
    links.push(url);
    const a = document.createElement("a");
    a.href = url;
    a.download = name;
    a.textContent = label;
    const li = document.createElement("li");
    li.append(a);
    return li;
  });
  document.getElementById("lab-downloads").replaceChildren(...items);
}

// Admissions per bucket -> [second the bucket starts, admitted per minute in it].
export function admissionRate({ counts, bucket_seconds: bucket }) {
  return counts.map((n, i) => [i * bucket, (n * 60) / bucket]);
}

function summaryRow(policy, doc) {
  const t = doc.totals;
  const cells = [
    LABELS[policy],
    t.sold_out_after_seconds === null ? "not sold out" : `${minutes(t.sold_out_after_seconds)} min`,
    doc.humans.wait_p50 === null ? "–" : `${minutes(doc.humans.wait_p50)} min`,
    doc.humans.wait_p90 === null ? "–" : `${minutes(doc.humans.wait_p90)} min`,
    doc.humans.with_seats_share === null ? "–" : `${formatNumber(doc.humans.with_seats_share * 100, 1)} %`,
    `${formatNumber(doc.bots.population_share * 100, 1)} %`,
    `${formatNumber(doc.bots.seat_share * 100, 1)} %`,
    formatNumber(t.not_admitted),
  ];
  const tr = document.createElement("tr");
  tr.dataset.policy = policy;
  for (const text of cells) {
    const td = document.createElement("td");
    td.textContent = text;
    tr.append(td);
  }
  return tr;
}

export function draw(result) {
  const policies = Object.entries(result.policies);
  const mid = c => (c.from_second + c.to_second) / 2;
  lineChart(document.getElementById("chart-waits"), policies.map(([p, doc]) => ({
    label: LABELS[p], color: COLORS[p],
    points: doc.cohorts.map(c => [mid(c), c.wait_p50]),
    band: doc.cohorts.map(c => [mid(c), c.wait_p10, c.wait_p90]),
  })), { xLabel: "arrival, minutes from the opening", yLabel: "wait after opening (s)",
         xFormat: minutes, label: "Wait after the opening by arrival cohort: median with the 10th to 90th percentile" });
  lineChart(document.getElementById("chart-cohort-seats"), policies.map(([p, doc]) => ({
    label: LABELS[p], color: COLORS[p], points: doc.cohorts.map(c => [mid(c), c.seat_share]),
  })), { xLabel: "arrival, minutes from the opening", yLabel: "share with seats",
         xFormat: minutes, yMax: 1, label: "Share of people who get seats by arrival cohort" });
  histogram(document.getElementById("chart-histogram"), policies.map(([p, doc]) => ({
    label: LABELS[p], color: COLORS[p], counts: doc.wait_histogram.counts,
    binWidth: doc.wait_histogram.bin_seconds,
  })), { xLabel: "wait after the opening (s)", yLabel: "people",
         label: "Distribution of waits after the opening" });
  barChart(document.getElementById("chart-seats"), policies.map(([p, doc]) => ({
    label: LABELS[p],
    bars: [{ label: "bots in the crowd", value: doc.bots.population_share, color: COLORS.population },
           { label: "seats bought by bots", value: doc.bots.seat_share, color: COLORS.bots },
           { label: "people who got seats", value: doc.humans.with_seats_share || 0, color: COLORS.humans }],
  })), { label: "Seats reached by multi-device visitors" });
  lineChart(document.getElementById("chart-admissions"), policies.map(([p, doc]) => ({
    label: LABELS[p], color: COLORS[p],
    points: admissionRate(doc.admissions),
  })), { xLabel: "minutes after the opening", yLabel: "admitted per minute", xFormat: minutes,
         label: "Admissions over time" });
  document.getElementById("lab-summary").replaceChildren(
    ...policies.map(([p, doc]) => summaryRow(p, doc)));
  offerDownloads(result.files);
  const s = result.scenario;
  document.getElementById("lab-note").textContent =
    `${formatNumber(s.people)} people over ${minutes(s.seconds)} min, the sale opening at minute ` +
    `${minutes(s.onsale_second)}; ${formatNumber(s.seats)} seats, up to ${s.tickets_per_account} per account; ` +
    `admission ${formatNumber(s.rate_min)}–${formatNumber(s.rate_max)} a minute, at most ` +
    `${formatNumber(s.active_cap)} shopping at once. Simulated in ${formatNumber(result.duration_ms)} ms (seed ${s.seed}).`;
}

function fillFromEvent(form) {
  const option = form.elements.event_id.selectedOptions[0];
  if (!option || !option.value) return;
  const set = (name, value) => {
    if (value !== undefined && value !== "") form.elements[name].value = value;
  };
  set("seats", option.dataset.seats);
  set("tickets_per_account", option.dataset.tickets);
  // The seats, limits and rates of the event are used by the server unless typed here.
  for (const name of ["rate_min", "rate_max", "active_cap", "session_seconds"]) set(name, "");
  const gap = Number(option.dataset.prequeueSeconds || 0);
  if (gap > 0) {
    const seconds = Math.min(7200, Math.max(gap + 600, Number(form.elements.seconds.value) || 0));
    form.elements.seconds.value = seconds;
    form.elements.onsale_second.value = Math.min(gap, seconds);
  }
}

export function initLab() {
  initNav();
  if (!requireToken()) return;
  const form = document.getElementById("lab-form");
  const results = document.getElementById("lab-results");
  const toggle = () => {
    const profile = form.elements.profile.value;
    document.getElementById("profile-counts").hidden = profile !== "counts";
    document.getElementById("profile-preset").hidden = profile !== "preset";
    document.getElementById("profile-csv").hidden = profile !== "csv";
    document.getElementById("profile-onsale").hidden = profile === "csv";
  };
  for (const radio of form.querySelectorAll("input[name=profile]")) radio.addEventListener("change", toggle);
  toggle();
  form.elements.event_id.addEventListener("change", () => fillFromEvent(form));
  fillFromEvent(form);
  form.addEventListener("submit", async event => {
    event.preventDefault();
    const file = form.elements.arrivals_csv.files[0];
    const upload = form.elements.profile.value === "csv";
    if (upload && !file) {
      form.elements.arrivals_csv.setAttribute("aria-invalid", "true");
      flash("Choose the arrivals CSV first.");
      return;
    }
    form.elements.arrivals_csv.removeAttribute("aria-invalid");
    const button = document.getElementById("lab-run");
    button.disabled = true;
    results.dataset.state = "running";
    flash("Simulating…", "info");
    try {
      const result = upload
        ? await opsApi(`/api/ops/fairness?${uploadQuery(new FormData(form))}`,
                       { method: "POST", upload: { type: "text/csv", data: file } })
        : await opsApi("/api/ops/fairness", { method: "POST", body: scenarioFromForm(form) });
      results.hidden = false;
      draw(result);
      results.dataset.state = "ready";
      flash("");
    } catch (error) {
      results.dataset.state = "error";
      const field = error.problem && error.problem.field;
      const named = field && !(error.problem.line && field === "arrivals");
      flash(named ? `${explain(error)} (${field.replaceAll("_", " ")})` : explain(error));
    } finally {
      button.disabled = false;
    }
  });
}
