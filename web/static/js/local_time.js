// An event's times are shown in its venue's zone by the server (<time datetime="UTC"
// data-venue-zone="Europe/Berlin">). When the shopper's own zone differs, this adds
// the same instant in their zone beside it: "Sat 28 Mar 2026, 19:30 CET (13:30 your time)".

/**
 * The instant ``iso`` in ``zone``, as the pages write times ("Sat 28 Mar 2026, 13:30 EST");
 * with ``sameDay`` the time of day alone ("13:30 EST").
 * @param {string} iso a UTC instant
 * @param {string} zone an IANA zone
 * @param {boolean} [sameDay]
 * @returns {string}
 */
export function inZone(iso, zone, sameDay = false) {
  const date = new Date(iso);
  /** @type {Record<string, string>} */
  const part = {};
  const format = new Intl.DateTimeFormat("en-GB", {
    timeZone: zone, weekday: "short", day: "numeric", month: "short", year: "numeric",
    hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZoneName: "short",
  });
  for (const { type, value } of format.formatToParts(date)) part[type] = value;
  const clock = `${part.hour}:${part.minute} ${zoneName(date, zone, part.timeZoneName)}`;
  return sameDay ? clock : `${part.weekday} ${part.day} ${part.month} ${part.year}, ${clock}`;
}

/**
 * The zone's abbreviation at that instant: British English names Europe's (CET, BST),
 * American English America's (EST, PDT); elsewhere the offset (GMT+13).
 * @param {Date} date
 * @param {string} zone
 * @param {string} british
 * @returns {string}
 */
function zoneName(date, zone, british) {
  if (!british.startsWith("GMT") || british === "GMT") return british;
  const american = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "short" })
    .formatToParts(date).find(p => p.type === "timeZoneName")?.value || british;
  return /^[A-Z]{2,5}$/.test(american) ? american : british;
}

/**
 * What to add beside a venue time for a shopper in ``ownZone``: "" when the zones
 * show the same offset at that instant; the time of day alone when it is the same
 * date in both zones; else the full date.
 * @param {string} iso
 * @param {string} venueZone
 * @param {string} ownZone
 * @returns {string}
 */
export function yourTime(iso, venueZone, ownZone) {
  const venue = inZone(iso, venueZone);
  const own = inZone(iso, ownZone);
  if (offsetOf(iso, venueZone) === offsetOf(iso, ownZone)) return "";
  const sameDay = venue.split(",")[0] === own.split(",")[0];
  return ` (${inZone(iso, ownZone, sameDay)} your time)`;
}

/**
 * The zone's offset from UTC at the instant, in minutes.
 * @param {string} iso
 * @param {string} zone
 * @returns {number}
 */
export function offsetOf(iso, zone) {
  const date = new Date(iso);
  /** @type {Record<string, number>} */
  const p = {};
  const format = new Intl.DateTimeFormat("en-US", {
    timeZone: zone, year: "numeric", month: "numeric", day: "numeric",
    hour: "numeric", minute: "numeric", second: "numeric", hourCycle: "h23",
  });
  for (const { type, value } of format.formatToParts(date)) {
    if (type !== "literal") p[type] = Number(value);
  }
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  return Math.round((asUtc - (date.getTime() - date.getMilliseconds())) / 60000);
}

function start() {
  const own = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!own) return;
  for (const time of document.querySelectorAll("time[data-venue-zone]")) {
    const iso = time.getAttribute("datetime");
    const zone = time.getAttribute("data-venue-zone");
    if (!iso || !zone || time.dataset.yourTime !== undefined) continue;
    let extra = "";
    try {
      extra = yourTime(iso, zone, own);
    } catch {
      continue;  // a zone this browser does not know: the venue's time stands alone
    }
    time.dataset.yourTime = extra;
    if (extra) time.after(document.createTextNode(extra));
  }
}

if (typeof document !== "undefined") start();
