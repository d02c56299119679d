import type { ServerResponse } from "node:http";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";

/** A Kubernetes `Status` (metav1.Status): what kubectl and client-go print for a failed request. */
export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure";
  message: string;
  reason: string;
  code: number;
  details?: { name?: string; group?: string; kind?: string; retryAfterSeconds?: number };
}

export function status(code: number, reason: string, message: string, details?: Status["details"]): Status {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
    ...(details ? { details } : {}),
  };
}

/** Kubernetes' StatusReason for a status the gateway answers itself. */
const REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  408: "Timeout",
  413: "RequestEntityTooLarge",
  429: "TooManyRequests",
  503: "ServiceUnavailable",
};

/** A problem (RFC 9457) as the Status kubectl reads, for answers common code words as problems. */
export function statusOfProblem(problem: { status: number; detail: string }): Status {
  return status(problem.status, REASONS[problem.status] ?? "BadRequest", problem.detail);
}

export const unauthorized = (message: string) => status(401, "Unauthorized", message);
export const forbidden = (message: string) => status(403, "Forbidden", message);
export const badRequest = (message: string) => status(400, "BadRequest", message);
export const serviceUnavailable = (message: string) => status(503, "ServiceUnavailable", message);

/** The API server's own wording for a missing object, so an object the caller may not see looks missing. */
export function notFound(resource: string, name: string, group = ""): Status {
  const qualified = group ? `${resource}.${group}` : resource;
  return status(404, "NotFound", `${qualified} "${name}" not found`, { name, group, kind: resource });
}

export function tooManyRequests(retryAfterSeconds: number, tenant: string | undefined): Status {
  return status(
    429,
    "TooManyRequests",
    tenant
      ? `too many requests for tenant "${tenant}": retry after ${retryAfterSeconds}s`
      : `too many requests: retry after ${retryAfterSeconds}s`,
    { retryAfterSeconds },
  );
}

export function sendStatus(res: ServerResponse, body: Status, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(body.code, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
    "Cache-Control": "no-cache, private",
    ...headers,
  });
  res.end(text);
}

/** The same answer on a socket being upgraded, where no ServerResponse exists. */
export function writeStatusToSocket(
  socket: Duplex,
  body: Status,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  const lines = [
    `HTTP/1.1 ${body.code} ${STATUS_CODES[body.code] ?? ""}`,
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(text)}`,
    "Connection: close",
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.end(`${lines.join("\r\n")}\r\n\r\n${text}`);
}
