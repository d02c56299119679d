import assert from "node:assert/strict";
import { type AddressInfo, connect } from "node:net";
import { test } from "node:test";
import Fastify from "fastify";
import { answerOversizedBodies } from "./oversized-body.js";

/**
 * Sends the whole request first and reads the answer after, as many clients do (Python's among
 * them): the status, or the error's code when the server cut the connection while it was sending.
 */
function post(port: number, bytes: number): Promise<number | string> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: "127.0.0.1" });
    // Nothing is read until everything is sent.
    socket.pause();
    let answer = "";
    socket.on("data", (data) => {
      answer += data.toString();
    });
    socket.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    socket.on("close", () =>
      resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1] ?? 0) || "closed without an answer"),
    );
    socket.write(
      `POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${bytes}\r\n\r\n`,
    );
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let sent = 0;
    const write = () => {
      while (sent < bytes) {
        const piece = chunk.subarray(0, Math.min(chunk.length, bytes - sent));
        sent += piece.length;
        const last = sent === bytes;
        const flushed = socket.write(piece, last ? () => socket.resume() : undefined);
        if (!flushed && !last) return socket.once("drain", write);
      }
    };
    write();
  });
}

test("a body over the limit gets its 413, not a broken connection; past the discard bound the connection is closed", async () => {
  const app = Fastify({ bodyLimit: 1024 });
  answerOversizedBodies(app, 16 * 1024 * 1024);
  app.post("/", async () => ({ ok: true }));
  await app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = app.server.address() as AddressInfo;
  try {
    assert.equal(await post(port, 8 * 1024 * 1024), 413);
    assert.notEqual(await post(port, 64 * 1024 * 1024), 200);
  } finally {
    await app.close();
  }
});
