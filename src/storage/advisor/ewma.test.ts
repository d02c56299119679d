import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { UserError } from "../../common/index.js";
import { DemandForecast, validateForecastOptions } from "./ewma.js";

const W = 10_000;
const T0 = 1_700_000_000_000;

function recordMany(forecast: DemandForecast, key: string, window: number, count: number) {
  for (let i = 0; i < count; i++) forecast.record(key, T0 + window * W + i);
}

describe("DemandForecast (EWMA per window)", () => {
  test("the first window starts the average, later ones smooth it", () => {
    const f = new DemandForecast({ smoothing: 0.5, windowMs: W }, T0);
    recordMany(f, "a", 0, 4);
    assert.equal(f.forecast("a"), 0, "nothing is forecast before a window closes");
    assert.equal(f.current("a"), 4);
    f.advance(T0 + W);
    assert.equal(f.forecast("a"), 4);
    recordMany(f, "a", 1, 8);
    f.advance(T0 + 2 * W);
    assert.equal(f.forecast("a"), 0.5 * 8 + 0.5 * 4);
    f.advance(T0 + 3 * W);
    assert.equal(f.forecast("a"), 0.5 * 0 + 0.5 * 6, "an empty window decays the average");
  });

  test("smoothing 1 follows the last window exactly", () => {
    const f = new DemandForecast({ smoothing: 1, windowMs: W }, T0);
    recordMany(f, "a", 0, 3);
    recordMany(f, "a", 1, 7);
    f.advance(T0 + 2 * W);
    assert.equal(f.forecast("a"), 7);
  });

  test("keys are independent and events land in the window of their own time", () => {
    const f = new DemandForecast({ smoothing: 0.3, windowMs: W }, T0);
    recordMany(f, "small", 0, 10);
    recordMany(f, "large", 1, 2);
    // Replayed history after a restart: an event from window 0 recorded late still counts there.
    f.record("small", T0 + 5);
    f.advance(T0 + 2 * W);
    assert.equal(f.forecast("small"), 0.3 * 0 + 0.7 * 11);
    assert.equal(f.forecast("large"), 2);
    assert.equal(f.record("small", T0 + 1), false, "a closed window takes no more events");
  });

  test("a long idle stretch decays at once and negligible series are dropped", () => {
    const f = new DemandForecast({ smoothing: 0.5, windowMs: W }, T0);
    recordMany(f, "a", 0, 1);
    f.advance(T0 + W);
    assert.deepEqual(f.keys(), ["a"]);
    assert.equal(f.advance(T0 + 5000 * W), 4999);
    assert.equal(f.forecast("a"), 0);
    assert.deepEqual(f.keys(), []);
  });

  test("nextClose is the end of the open window", () => {
    const f = new DemandForecast({ smoothing: 0.5, windowMs: W }, T0);
    assert.equal(f.nextClose(), T0 + W);
    f.advance(T0 + 2.5 * W);
    assert.equal(f.nextClose(), T0 + 3 * W);
  });

  test("bad options are refused naming the field and the limits", () => {
    assert.throws(
      () => validateForecastOptions({ smoothing: 0, windowMs: W }),
      (err: unknown) =>
        err instanceof UserError &&
        /storage\.advisor\.smoothing must be more than 0 and at most 1/.test(err.message),
    );
    assert.throws(
      () => validateForecastOptions({ smoothing: 1.5, windowMs: W }),
      /smoothing must be more than 0 and at most 1, got 1.5/,
    );
    assert.throws(
      () => validateForecastOptions({ smoothing: 0.5, windowMs: 500 }),
      /storage\.advisor\.windowSeconds must be from 1 to 86400, got 0.5/,
    );
  });
});
