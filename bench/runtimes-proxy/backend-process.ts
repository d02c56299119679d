/**
 * The benchmark's backend in a process of its own, the same for both proxies. Two listeners:
 * `url` is the full HTTP and WebSocket server of the tests (echo, streams, WebSocket echo);
 * `helloUrl` answers every GET with the same 6-byte response straight from the socket, so that the
 * throughput rows measure the proxies rather than the backend. Prints `{"url", "helloUrl"}`.
 */
import { createServer, type Socket } from "node:net";
import { startBackend } from "../../testing/index.js";

const HELLO = Buffer.from(
  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 6\r\nKeep-Alive: timeout=5\r\n\r\nhello\n",
);
const END_OF_HEAD = Buffer.from("\r\n\r\n");

/** Answers each request head (GET, no body) with HELLO; partial heads wait for the rest. */
function serveHello(socket: Socket): void {
  socket.setNoDelay(true);
  let pending: Buffer | undefined;
  socket.on("data", (chunk: Buffer) => {
    let data = pending ? Buffer.concat([pending, chunk]) : chunk;
    let answers = 0;
    for (;;) {
      const end = data.indexOf(END_OF_HEAD);
      if (end < 0) break;
      answers++;
      data = data.subarray(end + END_OF_HEAD.length);
    }
    pending = data.length ? Buffer.from(data) : undefined;
    if (answers === 1) socket.write(HELLO);
    else if (answers > 1) socket.write(Buffer.concat(Array.from({ length: answers }, () => HELLO)));
  });
  socket.on("error", () => socket.destroy());
}

const backend = await startBackend({ record: false });
const hello = createServer(serveHello);
await new Promise<void>((resolve) => hello.listen(0, "127.0.0.1", resolve));
const { port } = hello.address() as { port: number };
process.stdout.write(`${JSON.stringify({ url: backend.url, helloUrl: `http://127.0.0.1:${port}` })}\n`);
