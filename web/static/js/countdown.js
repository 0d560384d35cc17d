// Time left until an instant, in words, updated every second. The server's
// clock is the one that counts: pages pass their render time (data-server-now)
// so a visitor whose computer clock is off still sees the right countdown.

let offsetMs = 0;

/** @param {number} serverNowMs the server's clock (Unix ms); ignored unless positive */
export function setServerNow(serverNowMs) {
  if (Number.isFinite(serverNowMs) && serverNowMs > 0) offsetMs = serverNowMs - Date.now();
}

export function serverNow() {
  return Date.now() + offsetMs;
}

/**
 * 3725 -> "1 h 02 min 05 s"; 65 -> "1 min 05 s"; 4 -> "4 s" (rounded up, never negative).
 * @param {number} totalSeconds
 */
export function formatDuration(totalSeconds) {
  const s = Math.max(0, Math.ceil(totalSeconds));
  const days = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const two = (/** @type {number} */ n) => String(n).padStart(2, "0");
  if (days > 0) return `${days} d ${h} h ${two(m)} min`;
  if (h > 0) return `${h} h ${two(m)} min ${two(sec)} s`;
  if (m > 0) return `${m} min ${two(sec)} s`;
  return `${sec} s`;
}

/**
 * A wait in rough words: "less than a minute", "about 3 minutes", "about 2 hours".
 * @param {number | null | undefined} seconds
 */
export function roughly(seconds) {
  if (seconds == null) return "not known yet";
  if (seconds < 60) return "less than a minute";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `about ${minutes} minute${minutes === 1 ? "" : "s"}`;
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  const h = `about ${hours} hour${hours === 1 ? "" : "s"}`;
  return rest ? `${h} ${rest} min` : h;
}

// Show the time left until `targetMs` in `element` every second; call onDone
// once when it is reached. Returns a function that stops the countdown.
/**
 * @param {{textContent: string | null}} element
 * @param {number} targetMs Unix ms on the server's clock
 * @param {() => void} [onDone]
 * @returns {() => void}
 */
export function countdown(element, targetMs, onDone) {
  /** @type {ReturnType<typeof setInterval> | null} */
  let timer = null;
  const tick = () => {
    const left = (targetMs - serverNow()) / 1000;
    element.textContent = formatDuration(left);
    if (left <= 0) {
      if (timer !== null) clearInterval(timer);
      timer = null;
      if (onDone) onDone();
    }
  };
  timer = setInterval(tick, 1000);
  tick();
  return () => { if (timer) clearInterval(timer); timer = null; };
}
