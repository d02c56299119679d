import type { ServerResponse } from "node:http";

export interface EventStreamOptions {
  /** A comment this often keeps proxies and load balancers from closing an idle stream; default 15 s. */
  keepAliveMs?: number;
  /** How long a browser's EventSource waits before reconnecting (the `retry:` field). */
  retryMs?: number;
}

/**
 * A server-sent event stream on a response (the Admin API's and the proxy's start progress, the
 * dashboard's changes): the headers that keep it unbuffered, keep-alive comments, JSON events,
 * dropping an event equal to the last one sent, and one end, whether the server or the client
 * ends it.
 */
export class EventStream {
  private last = "";
  private done = false;
  private readonly keepAlive: NodeJS.Timeout;
  private readonly endHandlers: Array<() => void> = [];

  constructor(
    private readonly response: ServerResponse,
    options: EventStreamOptions = {},
  ) {
    response.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-store",
      connection: "keep-alive",
      // nginx and similar proxies buffer answers unless told not to.
      "x-accel-buffering": "no",
      "x-content-type-options": "nosniff",
    });
    if (options.retryMs !== undefined) response.write(`retry: ${options.retryMs}\n\n`);
    this.keepAlive = setInterval(() => response.write(": keep-alive\n\n"), options.keepAliveMs ?? 15_000);
    this.keepAlive.unref();
    response.on("close", () => this.end());
  }

  get ended(): boolean {
    return this.done;
  }

  /** Sends `data` as JSON, as an event of type `event` when given (else a message). */
  send(data: unknown, event?: string): void {
    if (this.done) return;
    const text = JSON.stringify(data);
    this.last = text;
    this.response.write(`${event ? `event: ${event}\n` : ""}data: ${text}\n\n`);
  }

  /** Sends `data` unless it is what was sent last; says whether it was sent. */
  sendIfChanged(data: unknown): boolean {
    if (this.done || JSON.stringify(data) === this.last) return false;
    this.send(data);
    return true;
  }

  /** Runs once the stream ends, whoever ended it. */
  onEnd(handler: () => void): void {
    if (this.done) handler();
    else this.endHandlers.push(handler);
  }

  end(): void {
    if (this.done) return;
    this.done = true;
    clearInterval(this.keepAlive);
    this.response.end();
    for (const handler of this.endHandlers.splice(0)) handler();
  }
}
