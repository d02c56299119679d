import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { forwardRequestHeaders, forwardResponseHeaders, HeaderEdits, rawHeader } from "./headers.js";

const context = { clientIp: "10.1.1.1", proto: "http" as const, trustForwarded: false };

function asObject(flat: string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (let i = 0; i < flat.length; i += 2) {
    const name = flat[i]!.toLowerCase();
    out[name] = [...(out[name] ?? []), flat[i + 1]!];
  }
  return out;
}

describe("request headers", () => {
  test("hop-by-hop headers and those the Connection header names stay behind; others keep their case and order", () => {
    const { headers } = forwardRequestHeaders(
      [
        "Host",
        "proxy.example",
        "Connection",
        "keep-alive, X-Hop",
        "Keep-Alive",
        "timeout=5",
        "X-Hop",
        "1",
        "TE",
        "trailers",
        "Proxy-Authorization",
        "Basic x",
        "Upgrade",
        "h2c",
        "Accept",
        "*/*",
        "Cookie",
        "a=1",
      ],
      context,
    );
    assert.deepEqual(headers.slice(0, 6), ["Host", "proxy.example", "Accept", "*/*", "Cookie", "a=1"]);
    const all = asObject(headers);
    for (const gone of ["connection", "keep-alive", "x-hop", "te", "proxy-authorization", "upgrade"]) {
      assert.equal(all[gone], undefined, gone);
    }
  });

  test("X-Forwarded-*: the caller's own are dropped unless trusted, then extended", () => {
    const raw = [
      "Host",
      "a.example",
      "X-Forwarded-For",
      "6.6.6.6",
      "X-Forwarded-Proto",
      "https",
      "X-Forwarded-Host",
      "b.example",
      "Forwarded",
      "for=6.6.6.6",
    ];
    const untrusted = asObject(forwardRequestHeaders(raw, context).headers);
    assert.deepEqual(untrusted["x-forwarded-for"], ["10.1.1.1"]);
    assert.deepEqual(untrusted["x-forwarded-proto"], ["http"]);
    assert.deepEqual(untrusted["x-forwarded-host"], ["a.example"]);
    assert.equal(untrusted.forwarded, undefined);
    const trusted = asObject(forwardRequestHeaders(raw, { ...context, trustForwarded: true }).headers);
    assert.deepEqual(trusted["x-forwarded-for"], ["6.6.6.6, 10.1.1.1"]);
    assert.deepEqual(trusted["x-forwarded-proto"], ["https"]);
    assert.deepEqual(trusted["x-forwarded-host"], ["b.example"]);
    assert.deepEqual(trusted.forwarded, ["for=6.6.6.6"]);
  });

  test("a body is there when Content-Length is not 0 or Transfer-Encoding is sent", () => {
    assert.equal(forwardRequestHeaders(["Content-Length", "0"], context).hasBody, false);
    assert.equal(forwardRequestHeaders(["Content-Length", "12"], context).hasBody, true);
    const chunked = forwardRequestHeaders(["Transfer-Encoding", "chunked"], context);
    assert.equal(chunked.hasBody, true);
    assert.equal(
      asObject(chunked.headers)["transfer-encoding"],
      undefined,
      "the proxy frames the body itself",
    );
    assert.equal(forwardRequestHeaders(["Accept", "*/*"], context).hasBody, false);
  });

  test("a module's edits replace the caller's headers of that name, or remove them", () => {
    const edits = new HeaderEdits();
    edits.setHeader("Authorization", "token abc");
    edits.removeHeader("cookie");
    const all = asObject(
      forwardRequestHeaders(["authorization", "Bearer mine", "Cookie", "s=1", "Accept", "x"], context, edits)
        .headers,
    );
    assert.deepEqual(all.authorization, ["token abc"]);
    assert.equal(all.cookie, undefined);
    assert.deepEqual(all.accept, ["x"]);
  });

  test("edits refuse values that could smuggle a header", () => {
    const edits = new HeaderEdits();
    assert.throws(() => edits.setHeader("X-A", "a\r\nX-B: b"));
    assert.throws(() => edits.setHeader("Bad Name", "x"));
  });

  test("an upgrade keeps Connection: Upgrade and its Upgrade header", () => {
    const all = asObject(
      forwardRequestHeaders(
        ["Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Key", "k"],
        context,
        undefined,
        "websocket",
      ).headers,
    );
    assert.deepEqual(all.connection, ["Upgrade"]);
    assert.deepEqual(all.upgrade, ["websocket"]);
    assert.deepEqual(all["sec-websocket-key"], ["k"]);
  });

  test("rawHeader finds the first value by name, whatever its case", () => {
    assert.equal(rawHeader(["Accept", "a", "ACCEPT", "b"], "accept"), "a");
    assert.equal(rawHeader(["Accept", "a"], "host"), undefined);
  });
});

describe("response headers", () => {
  test("hop-by-hop ones and those Connection names are dropped; repeated ones stay separate", () => {
    const flat = forwardResponseHeaders({
      connection: "close, x-hop",
      "keep-alive": "timeout=5",
      "x-hop": "1",
      "transfer-encoding": "chunked",
      "content-type": "text/plain",
      "set-cookie": ["a=1", "b=2"],
    });
    assert.deepEqual(flat, ["content-type", "text/plain", "set-cookie", "a=1", "set-cookie", "b=2"]);
  });
});
