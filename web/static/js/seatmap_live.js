// Keeps a seat map current (docs/seatmap-protocol.md, "The client, in full"):
// one HTTP snapshot, then the WebSocket of deltas. A delta that does not start
// at our version means we missed something: fetch the snapshot again. When the
// socket is unavailable or keeps failing, poll the snapshot at the rate the
// server asks for (its Cache-Control max-age) and keep retrying the socket.
//
//   const feed = new SeatmapFeed(eventId, {
//     onState(state, changedIds|null),  // null: everything may have changed
//     onLive(mode, pollSeconds),        // "live" | "paused" | "connecting"
//     onRefused(apiError) });           // the snapshot was refused (admission...)
//   feed.start();

import { ApiError } from "./api.js";
import { applyDelta, fromSnapshot } from "./seatmap_codec.js";

/** @typedef {import("./seatmap_codec.js").SeatState} SeatState */
/**
 * @typedef {{onState: (state: SeatState, changed: number[] | null) => void,
 *            onLive: (mode: string, pollSeconds: number) => void,
 *            onRefused: (error: ApiError) => void}} FeedHandlers
 */

const HEARTBEAT_SILENCE_MS = 15000;   // 3 heartbeats without a word: the socket is dead
const BACKOFF_MAX_MS = 30000;

/**
 * A WebSocket message: a text frame's JSON, or a binary frame's gzip-compressed JSON.
 * @param {string | Blob} data
 * @returns {Promise<any>}
 */
export async function decodeMessage(data) {
  if (typeof data === "string") return JSON.parse(data);
  const text = await new Response(data.stream().pipeThrough(new DecompressionStream("gzip"))).text();
  return JSON.parse(text);
}

export class SeatmapFeed {
  /**
   * @param {number | string} eventId
   * @param {FeedHandlers} handlers
   */
  constructor(eventId, handlers) {
    this.eventId = eventId;
    this.handlers = handlers;
    /** @type {SeatState | null} */
    this.state = null;
    /** @type {WebSocket | null} */
    this.socket = null;
    this.pollSeconds = 1;
    this.backoffMs = 1000;
    this.failures = 0;
    this.unavailable = false;
    this.mode = "connecting";
    this.stopped = false;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.pollTimer = null;
    this.lastHeard = 0;
    this.lagging = 0;        // heartbeats in a row that were ahead of our version
    this.resyncing = false;  // the socket closes for a resync: fetch the snapshot first
    setInterval(() => this.watchdog(), 1000);
  }

  async start() {
    await this.loadSnapshot();
    this.connect();
  }

  stop() {
    this.stopped = true;
    if (this.pollTimer !== null) clearTimeout(this.pollTimer);
    if (this.socket) this.socket.close(1000);
  }

  // GET the snapshot; throws ApiError when refused (the page explains why).
  async loadSnapshot() {
    let response;
    try {
      response = await fetch(`/api/events/${this.eventId}/seatmap`,
                             { credentials: "same-origin", headers: { Accept: "application/json" } });
    } catch {
      throw new ApiError(0, null);
    }
    let body = null;
    try { body = await response.json(); } catch { body = null; }
    if (!response.ok) throw new ApiError(response.status, body);
    const maxAge = /max-age=(\d+)/.exec(response.headers.get("Cache-Control") || "");
    this.pollSeconds = Math.max(1, maxAge ? Number(maxAge[1]) : 1);
    this.takeState(fromSnapshot(body), null);
    return response.headers.get("Seatmap-Source") || "stream";
  }

  /**
   * @param {SeatState} state
   * @param {number[] | null} changed
   */
  takeState(state, changed) {
    this.state = state;
    this.handlers.onState(state, changed);
  }

  /** @param {string} mode */
  setMode(mode) {
    if (mode === this.mode) return;
    this.mode = mode;
    this.handlers.onLive(mode, this.pollSeconds);
  }

  connect() {
    if (this.stopped || (this.socket && this.socket.readyState <= WebSocket.OPEN)) return;
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const since = this.state ? `?since=${encodeURIComponent(this.state.version)}` : "";
    const socket = new WebSocket(`${scheme}//${location.host}/ws/events/${this.eventId}/seatmap${since}`);
    socket.binaryType = "blob";
    this.socket = socket;
    this.lastHeard = Date.now();
    let chain = Promise.resolve();   // decode in order: a binary message may precede a text one
    socket.onmessage = event => {
      chain = chain.then(() => decodeMessage(event.data)).then(m => this.onMessage(socket, m))
                   .catch(() => socket.close(4001));
    };
    socket.onclose = event => this.onClose(socket, event.code);
  }

  /**
   * @param {WebSocket} socket
   * @param {any} message
   */
  onMessage(socket, message) {
    if (socket !== this.socket) return;
    this.lastHeard = Date.now();
    if (message.type === "snapshot") {
      this.takeState(fromSnapshot(message), null);
      this.wentLive();
    } else if (message.type === "delta") {
      const { applied, changed } = applyDelta(this.state, message);
      if (!applied || !this.state) { this.resync(); return; }   // never apply out of order
      this.handlers.onState(this.state, changed);
      this.wentLive();
    } else if (message.type === "heartbeat") {
      if (message.live) this.wentLive();
      else this.pause();
      if (message.live && this.state && message.version !== this.state.version) {
        // The server is ahead and no delta came: our copy is stale.
        this.lagging += 1;
        if (this.lagging >= 2) { this.lagging = 0; this.resync(); }
      } else {
        this.lagging = 0;
      }
    } else if (message.type === "unavailable") {
      this.unavailable = true;
    }
    // "reload": the server closes the socket next; onClose reconnects.
  }

  wentLive() {
    this.failures = 0;
    this.backoffMs = 1000;
    this.unavailable = false;
    if (this.pollTimer !== null) clearTimeout(this.pollTimer);
    this.pollTimer = null;
    this.setMode("live");
  }

  // Fetch the snapshot again and reopen the socket from its version (used after
  // a missed delta, and by the page after a hold failed).
  resync() {
    this.resyncing = true;
    if (this.socket && this.socket.readyState <= WebSocket.OPEN) this.socket.close(1000);
    else this.onClose(this.socket);
  }

  /**
   * @param {WebSocket | null} socket
   * @param {number} [code]
   */
  async onClose(socket, code) {
    if (socket !== this.socket || this.stopped) return;
    this.socket = null;
    // The admission behind the socket expired (4401) or was revoked (4403): ask for
    // the snapshot again, which either works (a renewed token) or shows the refusal.
    if (code === 4401 || code === 4403) this.resyncing = true;
    if (this.resyncing) {
      this.resyncing = false;
      try { await this.loadSnapshot(); } catch (error) { this.refused(error); return; }
      this.connect();
      return;
    }
    this.failures++;
    if (this.unavailable || this.failures >= 2) this.pause();
    const wait = this.backoffMs + Math.random() * 2000;   // spread reconnections out
    this.backoffMs = Math.min(BACKOFF_MAX_MS, this.backoffMs * 2);
    setTimeout(() => this.connect(), wait);
  }

  // No live feed: show it, and poll the snapshot at the server's rate.
  pause() {
    this.setMode("paused");
    if (this.pollTimer !== null) return;
    const poll = async () => {
      if (this.stopped || this.mode !== "paused") { this.pollTimer = null; return; }
      try {
        await this.loadSnapshot();
      } catch (error) {
        if (this.refused(error)) return;
      }
      this.pollTimer = setTimeout(poll, this.pollSeconds * 1000);
    };
    this.pollTimer = setTimeout(poll, this.pollSeconds * 1000);
  }

  // A refusal the shopper must act on (admission, sign-in) stops the feed.
  /** @param {unknown} error */
  refused(error) {
    if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
      this.stop();
      this.handlers.onRefused(error);
      return true;
    }
    return false;
  }

  watchdog() {
    if (this.socket && this.socket.readyState === WebSocket.OPEN &&
        Date.now() - this.lastHeard > HEARTBEAT_SILENCE_MS) {
      this.socket.close(4002);
    }
  }
}
