import type { FastifyInstance } from "fastify";

/**
 * Answers a request whose body is over the server's limit with its 413 instead of a cut
 * connection: the rest of the body is read and thrown away first (up to `maxDiscardBytes`; past
 * that the connection is closed), since a client still sending when the server hangs up sees a
 * broken pipe, not the answer.
 */
export function answerOversizedBodies(app: FastifyInstance, maxDiscardBytes: number): void {
  app.addHook("onError", async (request, _reply, error) => {
    if ((error as { code?: string }).code !== "FST_ERR_CTP_BODY_TOO_LARGE" || request.raw.complete) return;
    await new Promise<void>((resolve) => {
      let discarded = 0;
      const raw = request.raw;
      raw.on("data", (chunk: Buffer) => {
        discarded += chunk.length;
        if (discarded > maxDiscardBytes) {
          raw.destroy();
          resolve();
        }
      });
      raw
        .once("end", resolve)
        .once("error", () => resolve())
        .once("close", resolve);
      raw.resume();
    });
  });
}
