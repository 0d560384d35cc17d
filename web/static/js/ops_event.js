// One event in the operator console: settings, pause/resume, live figures
// drawn as sparklines over a rolling window kept in the page, and the audit.

import { flash } from "./api.js";
import { formatNumber, sparkline } from "./charts.js";
import { explain, initNav, opsApi, requireToken } from "./ops.js";

const REFRESH_MS = 2000;
const WINDOW = 90;             // points kept per figure: 3 minutes at 2 s
const AUDIT_MS = 30_000;

const STATES = {
  paused: "Paused by an operator: nobody is admitted; queued visitors keep their places.",
  unhealthy: "Paused because core or Redis is unhealthy; queued visitors keep their places.",
  decreasing: "Slowing down: a health target is breached.",
  holding: "Holding the rate steady.",
  increasing: "Admitting more each time: everything is healthy.",
};

const POLICIES = {
  fifo: "first come, first served",
  random: "random draw at the opening for everyone who arrives before",
  passthrough: "no queue: straight in",
};

const RISK_BANDS = ["raised", "high", "refused"];

/**
 * The event's risk bands in words, from its thresholds (null: that band is off).
 * @param {{raised?: number|null, high?: number|null, refused?: number|null}} risk
 * @returns {string}
 */
export function riskWords(risk) {
  const parts = [];
  if (risk.raised != null) parts.push(`${risk.raised} or more: more proof of work`);
  if (risk.high != null) parts.push(`${risk.high} or more: much more`);
  if (risk.refused != null) parts.push(`${risk.refused} or more: refused`);
  return parts.length
    ? `Scores of ${parts.join("; ")}.`
    : "Off: every join is treated as low risk (the event's own proof of work only).";
}

export function seconds(value) {
  if (value === null || value === undefined) return "–";
  if (value < 90) return `${Math.round(value)} s`;
  if (value < 5400) return `${Math.round(value / 60)} min`;
  return `${(value / 3600).toFixed(1)} h`;
}

export function bytes(value) {
  if (value === null || value === undefined) return "–";
  if (value < 1024) return `${value} B`;
  if (value < 1024 ** 2) return `${(value / 1024).toFixed(1)} KiB`;
  return `${(value / 1024 ** 2).toFixed(1)} MiB`;
}

const percent = v => (v === null || v === undefined ? "–" : `${formatNumber(v * 100, 1)} %`);

// Each figure: how to read it from the dashboard document, and how to show it.
const FIGURES = {
  queued: { read: d => d.queue.live.queued, show: v => formatNumber(v) },
  active: { read: d => d.queue.live.active, show: v => formatNumber(v) },
  admitted_per_minute: { read: d => d.queue.live.admitted_per_minute, show: v => formatNumber(v, 1) },
  abandoned: { read: d => d.queue.live.abandoned, show: v => formatNumber(v) },
  eta: { read: d => d.queue.live.eta_seconds_for_last, show: seconds },
  rate: { read: d => d.queue.controller.rate_per_minute, show: v => formatNumber(v, 1) },
  hold_p99: { read: d => d.health.hold_p99_ms, show: v => (v === null || v === undefined ? "no holds" : `${formatNumber(v)} ms`) },
  conflict_rate: { read: d => d.health.conflict_rate, show: percent },
  payment_unknowns: { read: d => d.payments.unknown, show: v => formatNumber(v) },
  cdc_lag: { read: d => d.cdc.lag_bytes, show: bytes },
};

export function initEventPage() {
  initNav();
  if (!requireToken()) return;
  const root = document.getElementById("ops-event");
  const eventId = root.dataset.eventId;
  const base = `/api/ops/events/${eventId}`;
  const history = Object.fromEntries(Object.keys(FIGURES).map(k => [k, []]));
  let timer = null;
  let latest = null;

  const $ = id => document.getElementById(id);

  function render(doc) {
    latest = doc;
    const { settings, controller } = doc.queue;
    root.dataset.paused = settings.paused ? "1" : "0";
    root.dataset.loaded = "1";
    $("policy-words").textContent = POLICIES[settings.queue_policy] || settings.queue_policy;
    $("policy-frozen").textContent = settings.policy_frozen
      ? "Frozen: the sale is open, so the queue policy can no longer change."
      : "Not frozen yet: the policy can still change until the sale opens.";
    $("policy-frozen").dataset.frozen = settings.policy_frozen ? "1" : "0";
    const policy = $("policy-select");
    if (document.activeElement !== policy) policy.value = settings.queue_policy;
    for (const [name, value] of [["rate-min", settings.admission_rate_min],
                                 ["rate-max", settings.admission_rate_max],
                                 ["cap", settings.active_cap]]) {
      const input = $(name);
      if (document.activeElement !== input && !input.dataset.dirty) input.value = value;
    }
    const risk = settings.risk || {};
    for (const band of RISK_BANDS) {
      const input = $(`risk-${band}`);
      if (document.activeElement !== input && !input.dataset.dirty) input.value = risk[band] ?? "";
    }
    $("risk-words").textContent = riskWords(risk);
    const state = settings.paused ? "paused" : (controller.state || "");
    $("admission-state").textContent = settings.paused
      ? "Admission is paused. Visitors in the queue see “paused” and keep their places."
      : "Admission is running.";
    $("admission-state").dataset.state = settings.paused ? "paused" : "running";
    $("pause").disabled = settings.paused;
    $("resume").disabled = !settings.paused;
    $("controller-state").textContent = state ? `${state}: ${STATES[state] || ""}` : "no admitter has run yet";
    $("controller-state").dataset.state = state;
    const reasons = $("controller-reasons");
    reasons.replaceChildren(...(controller.reasons || []).map(r => {
      const li = document.createElement("li");
      li.textContent = r;
      return li;
    }));
    const health = doc.health;
    $("health-words").textContent = !health.redis_ok ? "Redis cannot be reached from this edge."
      : health.fresh_reports === 0 ? "No fresh health report from core: admission pauses."
      : health.core_ok ? `Core healthy (${health.fresh_reports} report${health.fresh_reports === 1 ? "" : "s"}).`
      : "A core process cannot reach its database: admission pauses.";
    const cdc = doc.cdc;
    $("cdc-words").textContent = !cdc.present ? "No change-capture slot yet."
      : `Slot ${cdc.slot}: ${cdc.active ? "streaming" : "not streaming"}, WAL ${cdc.wal_status || "?"}` +
        (cdc.consumer_alive === false ? ", no consumer alive." : ".");
    const payments = doc.payments;
    $("payments-words").textContent = payments.available === false ? "Payments cannot be read now."
      : `${payments.pending} pending, ${payments.requires_action} waiting for 3-D Secure` +
        (payments.unknown ? `; oldest unknown ${seconds(payments.oldest_unknown_seconds)}.` : ".");
    for (const [name, figure] of Object.entries(FIGURES)) {
      let value = figure.read(doc);
      if (value === undefined) value = null;
      const series = history[name];
      series.push(value);
      if (series.length > WINDOW) series.shift();
      const card = root.querySelector(`[data-figure="${name}"]`);
      card.querySelector(".value").textContent = figure.show(value);
      sparkline(card.querySelector("svg"), series);
    }
    $("updated").textContent = `Updated ${new Date(doc.at).toLocaleTimeString()}`;
  }

  async function refresh() {
    try {
      render(await opsApi(`${base}/dashboard`));
      $("stale").hidden = true;
    } catch (error) {
      $("stale").hidden = false;
      $("stale").textContent = `Figures are not updating: ${explain(error)}`;
    }
    timer = setTimeout(refresh, REFRESH_MS);
  }

  async function act(button, path, options, done) {
    button.disabled = true;
    try {
      const doc = await opsApi(path, options);
      if (latest && doc) render({ ...latest, queue: doc, at: new Date().toISOString() });
      flash(done, "ok");
    } catch (error) {
      flash(explain(error));
    } finally {
      button.disabled = false;  // render() below sets pause/resume from the state again
      if (latest) render(latest);
    }
  }

  $("pause").addEventListener("click", e =>
    act(e.currentTarget, `${base}/queue/pause`, { method: "POST" },
        "Admission paused. Queued visitors keep their places."));
  $("resume").addEventListener("click", e =>
    act(e.currentTarget, `${base}/queue/resume`, { method: "POST" }, "Admission resumed."));
  $("policy-form").addEventListener("submit", e => {
    e.preventDefault();
    act(e.submitter || $("policy-save"), `${base}/queue`,
        { method: "PATCH", body: { queue_policy: $("policy-select").value } },
        "Queue policy saved.");
  });
  $("admission-form").addEventListener("submit", e => {
    e.preventDefault();
    const body = {};
    for (const [name, field] of [["rate-min", "admission_rate_min"], ["rate-max", "admission_rate_max"],
                                 ["cap", "active_cap"]]) {
      const number = Number($(name).value);
      if (!Number.isInteger(number) || number < 1) {
        flash("Rates and the cap must be whole numbers of 1 or more.");
        return;
      }
      body[field] = number;
      delete $(name).dataset.dirty;
    }
    act(e.submitter || $("admission-save"), `${base}/queue`, { method: "PATCH", body },
        "Admission settings saved.");
  });
  $("risk-form").addEventListener("submit", e => {
    e.preventDefault();
    const risk = {};
    for (const band of RISK_BANDS) {
      const text = $(`risk-${band}`).value.trim();
      const number = Number(text);
      if (text && (!Number.isInteger(number) || number < 1 || number > 100)) {
        flash("Each risk threshold is a whole number from 1 to 100, or blank for off.");
        return;
      }
      risk[band] = text ? number : null;
    }
    const set = RISK_BANDS.map(band => risk[band]).filter(v => v !== null);
    if (set.some((v, i) => i > 0 && v <= set[i - 1])) {
      flash("The risk thresholds must rise: more work, then much more, then refused.");
      return;
    }
    for (const band of RISK_BANDS) delete $(`risk-${band}`).dataset.dirty;
    act(e.submitter || $("risk-save"), `${base}/queue`, { method: "PATCH", body: { risk } },
        "Risk thresholds saved.");
  });
  for (const name of ["rate-min", "rate-max", "cap", ...RISK_BANDS.map(b => `risk-${b}`)]) {
    $(name).addEventListener("input", () => { $(name).dataset.dirty = "1"; });
  }

  async function audit(fresh) {
    const box = $("audit-result");
    try {
      const doc = await opsApi(`/api/ops/audit${fresh ? "?fresh=1" : ""}`);
      box.dataset.ok = doc.ok ? "1" : "0";
      $("audit-summary").textContent = doc.ok
        ? `All ${doc.checks.length} invariant checks pass.`
        : `${doc.violations} violation${doc.violations === 1 ? "" : "s"} found: see below.`;
      $("audit-age").textContent = `Checked ${seconds(doc.age_seconds)} ago in ${formatNumber(doc.duration_ms)} ms ` +
        `(the result is reused for ${doc.cached_for_seconds} s).`;
      $("audit-checks").replaceChildren(...doc.checks.map(c => {
        const li = document.createElement("li");
        li.dataset.ok = c.ok ? "1" : "0";
        li.textContent = `${c.ok ? "✓" : "✗"} ${c.name.replaceAll("_", " ")}` +
          (c.ok ? "" : ` — ${c.violations}: ${JSON.stringify(c.sample[0] || {})}`);
        return li;
      }));
    } catch (error) {
      box.dataset.ok = "";
      $("audit-summary").textContent = `The audit could not run: ${explain(error)}`;
    }
  }
  $("audit-run").addEventListener("click", () => audit(true));
  audit(false);
  setInterval(() => audit(false), AUDIT_MS);
  refresh();
  window.addEventListener("pagehide", () => clearTimeout(timer));
}
