// The countdown (web/static/js/countdown.js): durations and waits in words, the
// server's clock, and the ticking element, with the clock and the timer stood in for.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  countdown, formatDuration, roughly, serverNow, setServerNow,
} from "../../web/static/js/countdown.js";

test("a duration in words, rounded up to the second, never negative", () => {
  assert.equal(formatDuration(3725), "1 h 02 min 05 s");
  assert.equal(formatDuration(65), "1 min 05 s");
  assert.equal(formatDuration(60), "1 min 00 s");
  assert.equal(formatDuration(3600), "1 h 00 min 00 s");
  assert.equal(formatDuration(4), "4 s");
  assert.equal(formatDuration(4.01), "5 s");
  assert.equal(formatDuration(0), "0 s");
  assert.equal(formatDuration(-3), "0 s");
  assert.equal(formatDuration(86400), "1 d 0 h 00 min");
  assert.equal(formatDuration(90061), "1 d 1 h 01 min");     // days drop the seconds
});

test("a wait in rough words", () => {
  assert.equal(roughly(null), "not known yet");
  assert.equal(roughly(undefined), "not known yet");
  assert.equal(roughly(0), "less than a minute");
  assert.equal(roughly(59), "less than a minute");
  assert.equal(roughly(60), "about 1 minute");
  assert.equal(roughly(89), "about 1 minute");
  assert.equal(roughly(90), "about 2 minutes");
  assert.equal(roughly(3569), "about 59 minutes");
  assert.equal(roughly(3570), "about 1 hour");
  assert.equal(roughly(5400), "about 1 hour 30 min");
  assert.equal(roughly(7260), "about 2 hours 1 min");
});

// This computer's clock, stood in for: `at.ms` is what Date.now() answers.
function fakeClock(t) {
  const at = { ms: 1_000_000 };
  const realNow = Date.now;
  Date.now = () => at.ms;
  t.after(() => { Date.now = realNow; setServerNow(realNow()); });
  setServerNow(at.ms);   // no offset to start with
  return at;
}

// setInterval and clearInterval, stood in for: `timers` holds the running ones.
function fakeTimers(t) {
  const timers = new Map();
  let next = 1;
  const real = { setInterval: globalThis.setInterval, clearInterval: globalThis.clearInterval };
  globalThis.setInterval = (fn, ms) => { timers.set(next, { fn, ms }); return next++; };
  globalThis.clearInterval = id => { timers.delete(id); };
  t.after(() => Object.assign(globalThis, real));
  return timers;
}

test("the server's clock: our clock plus the offset the page was rendered with", t => {
  const at = fakeClock(t);
  setServerNow(1_005_000);                 // the server is 5 s ahead of us
  assert.equal(serverNow(), 1_005_000);
  at.ms += 1000;
  assert.equal(serverNow(), 1_006_000);
  for (const nonsense of [NaN, 0, -5, Infinity]) setServerNow(nonsense);   // ignored
  assert.equal(serverNow(), 1_006_000);
});

test("a countdown shows the time left every second and calls back once at zero", t => {
  const at = fakeClock(t);
  const timers = fakeTimers(t);
  const element = { textContent: "" };
  let done = 0;
  countdown(element, at.ms + 2500, () => { done += 1; });
  assert.equal(element.textContent, "3 s");     // at once, rounded up
  const [[id, timer]] = timers;
  assert.equal(timer.ms, 1000);
  at.ms += 1000; timer.fn();
  assert.equal(element.textContent, "2 s");
  at.ms += 1000; timer.fn();
  assert.equal(element.textContent, "1 s");
  assert.equal(done, 0);
  at.ms += 1000; timer.fn();
  assert.equal(element.textContent, "0 s");
  assert.equal(done, 1);
  assert.equal(timers.has(id), false);          // stopped itself
});

test("a countdown counts on the server's clock and can be stopped", t => {
  const at = fakeClock(t);
  const timers = fakeTimers(t);
  setServerNow(at.ms + 60_000);                 // this computer's clock is a minute slow
  const element = { textContent: "" };
  const stop = countdown(element, at.ms + 125_000, () => assert.fail("stopped before zero"));
  assert.equal(element.textContent, "1 min 05 s");
  stop();
  assert.equal(timers.size, 0);
  stop();                                       // twice is harmless
});

test("a countdown to a moment already past calls back at once", t => {
  const at = fakeClock(t);
  const timers = fakeTimers(t);
  const element = { textContent: "" };
  let done = 0;
  countdown(element, at.ms - 1, () => { done += 1; });
  assert.equal(element.textContent, "0 s");
  assert.equal(done, 1);
  assert.equal(timers.size, 0);
});
