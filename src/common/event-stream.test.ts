import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";
import { EventStream } from "./event-stream.js";

/** A server whose one route opens an EventStream and hands it to `use`. */
async function serve(use: (events: EventStream) => void, options = {}) {
  const server = createServer((_req, res) => use(new EventStream(res, options)));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe("server-sent event streams", () => {
  it("send JSON events, drop one equal to the last, and end once", async () => {
    let ends = 0;
    const server = await serve(
      (events) => {
        events.onEnd(() => ends++);
        events.send({ n: 1 });
        assert.equal(events.sendIfChanged({ n: 1 }), false);
        assert.equal(events.sendIfChanged({ n: 2 }), true);
        events.send({ ready: false }, "gone");
        events.end();
        events.end();
        events.send({ n: 3 });
      },
      { retryMs: 2000 },
    );
    try {
      const res = await fetch(server.url);
      assert.equal(res.headers.get("content-type"), "text/event-stream");
      assert.equal(res.headers.get("cache-control"), "no-store");
      assert.equal(res.headers.get("x-accel-buffering"), "no");
      assert.equal(
        await res.text(),
        'retry: 2000\n\ndata: {"n":1}\n\ndata: {"n":2}\n\nevent: gone\ndata: {"ready":false}\n\n',
      );
      assert.equal(ends, 1);
    } finally {
      await server.close();
    }
  });

  it("keep an idle stream alive with comments, and end when the client goes away", async () => {
    let ended: () => void = () => {};
    const gone = new Promise<void>((resolve) => {
      ended = resolve;
    });
    const server = await serve((events) => events.onEnd(ended), { keepAliveMs: 20 });
    try {
      const controller = new AbortController();
      const res = await fetch(server.url, { signal: controller.signal });
      const reader = res.body!.getReader();
      assert.equal(new TextDecoder().decode((await reader.read()).value), ": keep-alive\n\n");
      controller.abort();
      await gone;
    } finally {
      await server.close();
    }
  });
});
