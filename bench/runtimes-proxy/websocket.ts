/** WebSocket through a proxy: connection set-up (upgrade answered, first message in) and echo round trips. */
import WebSocket from "ws";
import { BENCH_CREDENTIAL } from "./routes.js";

function open(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { ...BENCH_CREDENTIAL } });
    // The backend greets each connection: the first message means the whole path is open.
    ws.once("message", () => {
      ws.off("error", reject);
      resolve(ws);
    });
    ws.once("error", reject);
  });
}

/** Echo round trips on one socket, one at a time; each resolves with its time in ms. */
class Echoes {
  private waiting?: { resolve: () => void; reject: (err: Error) => void };

  constructor(private readonly ws: WebSocket) {
    ws.on("message", () => this.waiting?.resolve());
    ws.on("error", (err) => this.waiting?.reject(err));
    ws.on("close", () => this.waiting?.reject(new Error("the WebSocket closed")));
  }

  roundTrip(payload: Buffer): Promise<number> {
    const started = performance.now();
    return new Promise((resolve, reject) => {
      this.waiting = { resolve: () => resolve(performance.now() - started), reject };
      this.ws.send(payload);
    });
  }
}

/**
 * `connections` sequential connections (set-up times, ms), then `messages` echoes of 64 bytes on
 * one (round trips, ms); a tenth as many of each go first, untimed, as warm-up.
 */
export async function measureWebSocket(
  url: string,
  connections: number,
  messages: number,
): Promise<{ connect: number[]; echo: number[] }> {
  const wsUrl = url.replace(/^http/, "ws");
  const connect: number[] = [];
  const warmConnections = Math.ceil(connections / 10);
  for (let i = 0; i < warmConnections + connections; i++) {
    const started = performance.now();
    const ws = await open(wsUrl);
    if (i >= warmConnections) connect.push(performance.now() - started);
    ws.terminate();
  }
  const ws = await open(wsUrl);
  const echoes = new Echoes(ws);
  const payload = Buffer.alloc(64, 0x61);
  const warmMessages = Math.ceil(messages / 10);
  const echo: number[] = [];
  for (let i = 0; i < warmMessages + messages; i++) {
    const time = await echoes.roundTrip(payload);
    if (i >= warmMessages) echo.push(time);
  }
  ws.close();
  return { connect, echo };
}
