import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";

/**
 * How long stopping waits for requests already received: longer than kube-apiserver's default
 * webhook timeout (10 s), past which it has given up on them anyway.
 */
export const DEFAULT_DRAIN_TIMEOUT_MS = 15_000;

/** Fastify options for a server that drains on close: idle connections close at once, busy ones after their answer. */
export const drainingServerOptions = { forceCloseConnections: "idle", return503OnClosing: false } as const;

export interface GracefulClose {
  /** Requests being answered now. */
  readonly pending: number;
  /**
   * Going away soon: keep answering, but ask every client to close its connection after the
   * answer, so that its next request goes to a replica that stays (a Service's other endpoints).
   */
  drain(): void;
  /**
   * Stops accepting connections, closes idle ones, and answers every request already received
   * (closing its connection after); whatever is still open after `timeoutMs` is cut.
   */
  close(timeoutMs?: number): Promise<void>;
}

/**
 * Graceful closing for a server kube-apiserver calls (admission, token and authorization
 * webhooks): a request it already sent is answered, never cut, when a replica stops. The Fastify
 * instance must be built with {@link drainingServerOptions}.
 */
export function gracefulClose(app: FastifyInstance, what: string, logger?: Logger): GracefulClose {
  let draining = false;
  let inFlight = 0;
  app.addHook("onRequest", async () => {
    inFlight++;
  });
  app.addHook("onResponse", async () => {
    inFlight--;
  });
  app.addHook("onSend", async (_request, reply, payload) => {
    if (draining) reply.header("connection", "close");
    return payload;
  });
  return {
    get pending() {
      return inFlight;
    },
    drain() {
      draining = true;
    },
    async close(timeoutMs = DEFAULT_DRAIN_TIMEOUT_MS) {
      draining = true;
      if (inFlight > 0) logger?.info({ inFlight }, `answering in-flight ${what} before stopping`);
      const cut = setTimeout(() => {
        logger?.warn(
          { inFlight },
          `${what} still in flight after the drain timeout: closing their connections`,
        );
        app.server.closeAllConnections();
      }, timeoutMs);
      try {
        await app.close();
      } finally {
        clearTimeout(cut);
      }
    },
  };
}
