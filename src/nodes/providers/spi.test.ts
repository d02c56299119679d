import assert from "node:assert/strict";
import { test } from "node:test";
import { describeError } from "../../kube/index.js";
import { ProviderError } from "./spi.js";

test("a provider's refusal is described by its message, not by its HTTP status alone", () => {
  const err = new ProviderError(
    "Keystone refused tenantry's credentials (HTTP 401): Unauthorized",
    false,
    401,
  );
  assert.equal(describeError(err), "Keystone refused tenantry's credentials (HTTP 401): Unauthorized");
  assert.equal(err.providerStatus, 401);
});
