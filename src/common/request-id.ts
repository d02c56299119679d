import { randomUUID } from "node:crypto";
import { type FastifyInstance, LogController } from "fastify";

/** The header carrying a request's id: taken from the caller when it sends one, echoed in every answer. */
export const REQUEST_ID_HEADER = "x-request-id";

/**
 * Fastify server options giving every request an id (the caller's X-Request-Id, else a new UUID)
 * that each log line written about it carries as `requestId`.
 */
export function requestIdOptions() {
  return {
    requestIdHeader: REQUEST_ID_HEADER,
    logController: new LogController({ requestIdLogLabel: "requestId" }),
    genReqId: () => randomUUID(),
  };
}

/** Answers carry their request's id, so a caller's report can be matched with the server's logs. */
export function echoRequestId(app: FastifyInstance): void {
  app.addHook("onSend", async (request, reply, payload) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    return payload;
  });
}
