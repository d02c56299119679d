import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ApiException } from "@kubernetes/client-node";
import {
  describeError,
  isAlreadyExists,
  isConflict,
  isGone,
  isNotFound,
  isTransportError,
  statusCode,
  statusReason,
} from "./errors.js";

function apiException(code: number, reason: string, message = reason): ApiException<string> {
  // client-node puts the raw response text into `body`.
  const body = JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", code, reason, message });
  return new ApiException(code, "Unsuccessful HTTP Request", body, { "content-type": "application/json" });
}

describe("errors", () => {
  test("classifies ApiException by HTTP code and Status reason", () => {
    assert.ok(isNotFound(apiException(404, "NotFound")));
    assert.ok(isConflict(apiException(409, "Conflict")));
    assert.ok(!isAlreadyExists(apiException(409, "Conflict")));
    assert.ok(isAlreadyExists(apiException(409, "AlreadyExists")));
    assert.ok(!isConflict(apiException(409, "AlreadyExists")));
    assert.ok(isGone(apiException(410, "Expired")));
    assert.equal(statusReason(apiException(410, "Expired")), "Expired");
    assert.ok(!isNotFound(apiException(500, "InternalError")));
  });

  test("reads the status of Watch errors and watch ERROR events", () => {
    const watchError = Object.assign(new Error("Gone"), { statusCode: 410 });
    assert.equal(statusCode(watchError), 410);
    const event = { kind: "Status", apiVersion: "v1", code: 410, reason: "Expired", message: "too old" };
    assert.ok(isGone(event));
  });

  test("transport errors have no status code", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    assert.equal(statusCode(refused), undefined);
    assert.ok(!isNotFound(refused));
    assert.equal(statusCode(undefined), undefined);
    assert.equal(statusCode("boom"), undefined);
    // An ApiException without a body (client-node does that for 401) still has its code.
    assert.equal(statusCode(new ApiException(401, "Unauthorized", undefined, {})), 401);
  });

  test("describeError is short and keeps the server's message", () => {
    assert.equal(
      describeError(apiException(409, "Conflict", "the object has been modified")),
      "HTTP 409: the object has been modified",
    );
    assert.equal(describeError(new Error("socket hang up")), "socket hang up");
    assert.equal(describeError(new ApiException(401, "Unauthorized", undefined, {})), "HTTP 401");
  });

  test("a fetch failure names its cause and counts as a transport error (undici nests it)", async () => {
    // A real refused connection through Node's fetch, as client-node 2.x makes it.
    const { createServer } = await import("node:net");
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    await new Promise((resolve) => server.close(resolve));
    const err = await fetch(`http://127.0.0.1:${port}/`).then(
      () => assert.fail("nothing listens there"),
      (e: unknown) => e,
    );
    assert.match(describeError(err), new RegExp(`^fetch failed: .*ECONNREFUSED 127.0.0.1:${port}`));
    assert.ok(isTransportError(err));
    assert.ok(!isTransportError(apiException(503, "ServiceUnavailable")));
    assert.ok(!isTransportError(new Error("the tenant is cordoned")));
  });
});
