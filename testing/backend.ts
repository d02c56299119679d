/**
 * A real HTTP and WebSocket server on 127.0.0.1 standing in for a runtime's pod behind the
 * runtimes proxy (tests and the proxy benchmark): echoes requests, takes and serves large bodies
 * as streams, sends server-sent events, and echoes WebSocket messages.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

export interface Backend {
  url: string;
  port: number;
  /** Requests and upgrades received, oldest first (cleared by `seen.length = 0`). */
  seen: SeenRequest[];
  /** WebSocket connections open now. */
  openSockets(): number;
  /** Server-sent event streams (`/events`) open now. */
  openStreams(): number;
  /** Bytes written to `/download` responses so far, all requests together. */
  downloaded(): number;
  /** Bytes read from `/upload` bodies so far, all requests together. */
  uploaded(): number;
  /** Lets held uploads (`/upload?hold=1`) read on. */
  releaseUploads(): void;
  close(): Promise<void>;
}

const CHUNK = Buffer.alloc(64 * 1024, 0x61);
const HELLO = Buffer.from("hello\n");

/**
 * Routes: `/hello` (6 bytes), `/echo` (the request as JSON), `/upload` (reads the body, answers its
 * size and SHA-256; with `?hold=1` it reads nothing until `releaseUploads()`, so a sender meets
 * back-pressure), `/download?bytes=N` (N bytes, streamed, written only as the reader takes them), `/events?count=N&interval=ms`
 * (server-sent events), `/status/<code>`; any path upgrades to a WebSocket echo.
 */
export async function startBackend(options: { host?: string; record?: boolean } = {}): Promise<Backend> {
  const seen: SeenRequest[] = [];
  let streams = 0;
  let downloaded = 0;
  let uploaded = 0;
  const held: Array<() => void> = [];
  const record = options.record ?? true;
  const server: Server = createServer({ keepAlive: true }, (req, res) => {
    const url = req.url ?? "/";
    if (record) seen.push({ method: req.method ?? "", url, headers: req.headers });
    const path = url.split("?")[0]!;
    if (path.endsWith("/hello")) {
      res.writeHead(200, { "content-type": "text/plain", "content-length": HELLO.length });
      res.end(HELLO);
      return;
    }
    if (path.endsWith("/upload")) {
      const hash = createHash("sha256");
      let bytes = 0;
      req.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        uploaded += chunk.length;
        hash.update(chunk);
      });
      if (new URL(url, "http://x").searchParams.get("hold") === "1") {
        req.pause();
        held.push(() => req.resume());
      }
      req.on("end", () => {
        const body = JSON.stringify({ bytes, sha256: hash.digest("hex") });
        res.writeHead(200, { "content-type": "application/json" });
        res.end(body);
      });
      return;
    }
    if (path.endsWith("/download")) {
      let left = Number(new URL(url, "http://x").searchParams.get("bytes") ?? "0");
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": left });
      const pump = () => {
        while (left > 0) {
          const chunk = left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left);
          left -= chunk.length;
          downloaded += chunk.length;
          if (!res.write(chunk)) {
            res.once("drain", pump);
            return;
          }
        }
        res.end();
      };
      pump();
      return;
    }
    if (path.endsWith("/events")) {
      const params = new URL(url, "http://x").searchParams;
      const count = Number(params.get("count") ?? "3");
      const interval = Number(params.get("interval") ?? "50");
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
      streams++;
      let sent = 0;
      const timer = setInterval(() => {
        res.write(`data: ${sent++}\n\n`);
        if (sent >= count) {
          clearInterval(timer);
          res.end();
        }
      }, interval);
      res.on("close", () => {
        streams--;
        clearInterval(timer);
      });
      return;
    }
    const status = /\/status\/(\d{3})$/.exec(path);
    if (status) {
      res.writeHead(Number(status[1]), { "content-type": "text/plain" });
      res.end(`status ${status[1]}\n`);
      return;
    }
    const body = JSON.stringify({ method: req.method, url, headers: req.headers });
    res.writeHead(200, { "content-type": "application/json", "set-cookie": ["a=1", "b=2"] });
    res.end(body);
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on("upgrade", (req, socket, head) => {
    if (record) seen.push({ method: req.method ?? "", url: req.url ?? "/", headers: req.headers });
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on("message", (data, isBinary) => ws.send(data, { binary: isBinary }));
      ws.send(JSON.stringify({ url: req.url, headers: req.headers }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, options.host ?? "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? "127.0.0.1"}:${port}`,
    port,
    seen,
    openSockets: () => wss.clients.size,
    openStreams: () => streams,
    downloaded: () => downloaded,
    uploaded: () => uploaded,
    releaseUploads: () => {
      for (const resume of held.splice(0)) resume();
    },
    async close() {
      for (const client of wss.clients) client.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
