import assert from "node:assert/strict";
import { test } from "node:test";
import {
  addAmounts,
  formatQuantity,
  parseQuantity,
  QuantityError,
  toAmounts,
  toResourceList,
} from "./quantity.js";

test("parses every quantity form into exact nano-units", () => {
  assert.equal(parseQuantity("1"), 1_000_000_000n);
  assert.equal(parseQuantity("250m"), 250_000_000n);
  assert.equal(parseQuantity("1.5"), 1_500_000_000n);
  assert.equal(parseQuantity("1Ki"), 1024n * 1_000_000_000n);
  assert.equal(parseQuantity("1.5Gi"), 1610612736n * 1_000_000_000n);
  assert.equal(parseQuantity("2e3"), 2000n * 1_000_000_000n);
  assert.equal(parseQuantity("1k"), parseQuantity("1000"));
  assert.equal(parseQuantity("100n"), 100n);
  assert.equal(parseQuantity(".5"), 500_000_000n);
  assert.equal(parseQuantity("-2"), -2_000_000_000n);
  assert.equal(parseQuantity(30), 30_000_000_000n);
  // Below a nano-unit rounds up, like Kubernetes rounds requests.
  assert.equal(parseQuantity("0.0000000001"), 1n);
});

test("refuses what is not a quantity, naming it", () => {
  for (const bad of ["", "abc", "1.2.3", "5 Gi", "1Gb", "m"]) {
    assert.throws(
      () => parseQuantity(bad),
      (err: Error) => err instanceof QuantityError && err.message.includes(`"${bad}"`),
    );
  }
});

test("formats back canonically and sums exactly", () => {
  assert.equal(formatQuantity(parseQuantity("1500m")), "1500m");
  assert.equal(formatQuantity(parseQuantity("2000m")), "2");
  assert.equal(formatQuantity(parseQuantity("3Gi"), true), "3Gi");
  assert.equal(formatQuantity(0n), "0");
  const sum = addAmounts(
    toAmounts({ cpu: "100m", memory: "1Gi" }),
    toAmounts({ cpu: "0.9", memory: "1Gi", pods: "1" }),
  );
  assert.deepEqual(toResourceList(sum), { cpu: "1", memory: "2Gi", pods: "1" });
});

test("an exponent of more than two digits is no quantity tenantry computes with", () => {
  assert.throws(() => parseQuantity("1e999999999"), QuantityError);
  assert.throws(() => parseQuantity("1e1.5"), QuantityError);
  assert.equal(parseQuantity("1e99") > 0n, true);
});
