import assert from "node:assert/strict";
import { test } from "node:test";
import { RUNTIMES_NODE_TAINT_KEY } from "../../tenants/index.js";
import { PROCESS_NODE_PLACEMENT, PROCESS_NODE_TAINT } from "./constants.js";

test("the process node carries, and its placement tolerates, the taint tenantry reserves for runtimes", () => {
  assert.equal(PROCESS_NODE_TAINT.key, RUNTIMES_NODE_TAINT_KEY);
  assert.equal(PROCESS_NODE_PLACEMENT.tolerations[0]?.key, RUNTIMES_NODE_TAINT_KEY);
});
