/** `inject-headers` against the service-module conformance suite. */
import assert from "node:assert/strict";
import { INJECT_HEADERS_MODULE } from "../../src/runtimes/index.js";
import { serviceModuleConformance } from "./proxy-module-conformance.js";

const values = {
  settings: { "X-Injected": "first", Authorization: "token first-secret" },
  changedSettings: { "X-Injected": "second", Authorization: "token second-secret" },
};

serviceModuleConformance(INJECT_HEADERS_MODULE, () => ({
  module: INJECT_HEADERS_MODULE,
  ...values,
  badSettings: { settings: { Connection: "close" }, key: "Connection" },
  // The owner passes the proxy with their session; what they sent under an injected name is replaced.
  allowed: async () => ({ authorization: "Bearer the-callers-own", "x-other": "kept" }),
  received(headers, which) {
    assert.equal(headers["x-injected"], values[which]["X-Injected"]);
    assert.equal(headers.authorization, values[which].Authorization);
    assert.equal(headers["x-other"], "kept");
  },
}));
