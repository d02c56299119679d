import assert from "node:assert/strict";
import { test } from "node:test";
import { remoteNamespaceName } from "./names.js";

const id = "0f8c5c2e-6c1a-4c3e-9d3b-2a7c7f1e9b11";

test("remote namespace names per mapping strategy, and DefaultName's length limit", () => {
  assert.deepEqual(remoteNamespaceName({}, "shop", id), { name: `shop-${id}` });
  assert.deepEqual(remoteNamespaceName({ namespaceMappingStrategy: "EnforceSameName" }, "shop", id), {
    name: "shop",
  });
  assert.deepEqual(
    remoteNamespaceName({ namespaceMappingStrategy: "SelectedName", remoteNamespaceName: "far" }, "shop", id),
    { name: "far" },
  );
  assert.equal(remoteNamespaceName({}, "a".repeat(26), id).name?.length, 63);
  assert.match(
    remoteNamespaceName({}, "a".repeat(27), id).error ?? "",
    /\(64 characters, more than 63\): the local namespace name may have at most 26 characters with DefaultName; use EnforceSameName or SelectedName$/,
  );
  assert.match(
    remoteNamespaceName({ namespaceMappingStrategy: "SelectedName" }, "x", id).error ?? "",
    /needs spec\.remoteNamespaceName/,
  );
});
