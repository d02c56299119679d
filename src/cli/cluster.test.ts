import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseLabelArguments } from "./cluster.js";

describe("parseLabelArguments", () => {
  it("reads key=value to set and key- to remove, as kubectl label does", () => {
    assert.deepEqual(parseLabelArguments(["team=finance", "tier=", "old-"]), {
      set: { team: "finance", tier: "" },
      remove: ["old"],
    });
  });

  it("refuses anything else, naming it", () => {
    assert.throws(() => parseLabelArguments(["team"]), /label "team" must be key=value/);
    assert.throws(() => parseLabelArguments(["=x"]), /label "=x" must be key=value/);
  });
});
