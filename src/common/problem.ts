/**
 * RFC 9457 problem details: what every REST error of tenantry looks like, whichever server answers
 * it — Fastify's (see `serveProblems` in problem-server.ts) or a raw node:http one (the runtimes
 * proxy) — and whatever refuses it: a handler, schema validation, Fastify itself, or node's HTTP
 * parser before any handler saw the request.
 */
import { maxHeaderSize as defaultMaxHeaderSize, type ServerResponse, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { Type } from "@sinclair/typebox";

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** Members a problem may carry beyond RFC 9457's own: the request field at fault and the limit it broke. */
export interface ProblemMembers {
  field?: string;
  limit?: string | number;
  [member: string]: unknown;
}

export interface Problem extends ProblemMembers {
  type: string;
  title: string;
  status: number;
  detail: string;
}

/** The problem schema for OpenAPI documents; servers with more members extend its properties. */
export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: "`about:blank`: the status says what kind of problem it is." }),
    title: Type.String({ description: "A short summary." }),
    status: Type.Integer({ description: "The HTTP status." }),
    detail: Type.String({ description: "What is wrong, and what to do about it." }),
    field: Type.Optional(Type.String({ description: "The part of the request at fault." })),
    limit: Type.Optional(Type.Union([Type.String(), Type.Number()], { description: "The limit it broke." })),
  },
  { description: "An RFC 9457 problem.", additionalProperties: true },
);

/** The title of a problem that is no more than its status: the status's phrase. */
export function statusTitle(status: number): string {
  return STATUS_CODES[status]?.toLowerCase() ?? "error";
}

export function problemOf(
  status: number,
  title: string,
  detail: string,
  members: ProblemMembers = {},
): Problem {
  const defined = Object.entries(members).filter(([, value]) => value !== undefined);
  return { type: "about:blank", title, status, detail, ...Object.fromEntries(defined) };
}

/** A refusal a handler throws: the server answers it as its problem (with its headers). */
export class ProblemError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    detail: string,
    readonly members: ProblemMembers = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = "ProblemError";
  }

  get problem(): Problem {
    return problemOf(this.status, this.title, this.message, this.members);
  }
}

/** A problem on a raw ServerResponse; a response already under way is cut off instead. */
export function sendProblem(
  res: ServerResponse,
  problem: Problem,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(problem);
  res.writeHead(problem.status, {
    ...headers,
    "content-type": PROBLEM_CONTENT_TYPE,
    "content-length": Buffer.byteLength(body),
    "cache-control": "no-store",
  });
  res.end(body);
}

/**
 * A problem written straight to a socket where no ServerResponse exists (a refused upgrade, a
 * request node's parser refused), then the connection closed: at once when the peer has read it,
 * after a second in any case (a client that never reads must not keep the socket).
 */
export function writeProblemToSocket(
  socket: Duplex,
  problem: Problem,
  headers: Record<string, string> = {},
): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(problem);
  const lines = [`HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? ""}`];
  const all = {
    ...headers,
    "content-type": PROBLEM_CONTENT_TYPE,
    "content-length": String(Buffer.byteLength(body)),
    "cache-control": "no-store",
    connection: "close",
  };
  for (const [name, value] of Object.entries(all)) lines.push(`${name}: ${value}`);
  if (socket.writable) socket.end(`${lines.join("\r\n")}\r\n\r\n${body}`);
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * What node's HTTP parser refused, as a problem (undefined: the connection is gone, nothing to
 * answer). `maxHeaderSize` is the server's limit on the request line and headers together.
 */
export function clientErrorProblem(
  err: Error & { code?: string; reason?: string },
  maxHeaderSize = defaultMaxHeaderSize,
): Problem | undefined {
  switch (err.code) {
    case "ECONNRESET":
    case "EPIPE":
      return undefined;
    case "HPE_HEADER_OVERFLOW":
      return problemOf(
        431,
        "request header fields too large",
        `the request line and headers are larger than ${maxHeaderSize} bytes`,
        { field: "headers", limit: maxHeaderSize },
      );
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return problemOf(408, "request timeout", "the request did not arrive in time");
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
    case "HPE_INVALID_CONTENT_LENGTH":
      return problemOf(400, "malformed request", `Content-Length: ${err.reason ?? err.message}`, {
        field: "content-length",
      });
    case "HPE_INVALID_TRANSFER_ENCODING":
    case "HPE_INVALID_CHUNK_SIZE":
      return problemOf(400, "malformed request", `Transfer-Encoding: ${err.reason ?? err.message}`, {
        field: "transfer-encoding",
      });
    default:
      return problemOf(
        400,
        "malformed request",
        `the request is not well-formed HTTP/1.1 (${err.code ?? "parse error"}: ${err.reason ?? err.message})`,
      );
  }
}

const answered = new WeakSet<Duplex>();

/**
 * A server's `clientError` handler: the refusal as a problem, never a bare status line. Once per
 * connection (a parser that failed fails again on every later chunk); nothing is written when a
 * response on the connection has already begun. `write` renders it (the gateway speaks
 * Kubernetes' Status instead).
 */
export function answerClientError(
  err: Error & { code?: string; reason?: string },
  socket: Duplex,
  maxHeaderSize = defaultMaxHeaderSize,
  write: (socket: Duplex, problem: Problem) => void = writeProblemToSocket,
): void {
  if (answered.has(socket) || socket.destroyed) return;
  answered.add(socket);
  const problem = clientErrorProblem(err, maxHeaderSize);
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!problem || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  write(socket, problem);
}
