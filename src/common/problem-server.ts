/**
 * Every refusal of a Fastify server as an RFC 9457 problem: the handlers' (ProblemError), schema
 * validation's (naming the field and the limit), Fastify's own (a body over the limit, a path
 * segment over the router's limit, a malformed URL, a body that does not match its
 * Content-Length, an unsupported media type) and node's parser's (malformed requests, headers
 * over their limit). One place for every tenantry server, so none answers its errors its own way.
 */
import { maxHeaderSize as defaultMaxHeaderSize, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import {
  answerClientError,
  PROBLEM_CONTENT_TYPE,
  type Problem,
  ProblemError,
  problemOf,
  statusTitle,
} from "./problem.js";

/**
 * Longest path segment the router takes (Fastify's default is 100). Above every name a route's
 * schema allows, even percent-encoded, so a long name gets its schema's 400 naming the field and
 * its limit; past it, a 414.
 */
export const MAX_PARAM_LENGTH = 1024;

/**
 * How long, and how much of, the rest of a body over the limit is read and thrown away before its
 * 413 goes out (with `Connection: close`). A client that sends its whole body before reading the
 * answer (Python's http.client, most scripts) otherwise gets a reset connection, never the 413:
 * closing a socket with unread data makes the kernel send a RST, which discards the answer. Past
 * either bound the 413 is sent anyway and the connection closed.
 */
export const OVERSIZED_BODY_DISCARD_MS = 30_000;
export const OVERSIZED_BODY_DISCARD_BYTES = 1024 * 1024 * 1024;

export interface ProblemServerLimits {
  /** The largest body a route takes, in bytes. */
  bodyLimit: number;
  /** Longest path segment (default {@link MAX_PARAM_LENGTH}). */
  maxParamLength?: number;
  /** The server's limit on request line and headers (default node's, 16 KiB). */
  maxHeaderSize?: number;
}

/**
 * Fastify server options for these limits whose refusals are problems: Fastify's own router
 * errors (`frameworkErrors`) and node's parser errors (`clientErrorHandler`).
 */
export function problemServerOptions(limits: ProblemServerLimits) {
  const maxParamLength = limits.maxParamLength ?? MAX_PARAM_LENGTH;
  const maxHeaderSize = limits.maxHeaderSize ?? defaultMaxHeaderSize;
  return {
    bodyLimit: limits.bodyLimit,
    routerOptions: { maxParamLength },
    frameworkErrors: (error: Error & { code?: string }, _request: FastifyRequest, reply: FastifyReply) => {
      const problem = frameworkProblem(error, maxParamLength);
      void reply.code(problem.status).type(PROBLEM_CONTENT_TYPE).send(problem);
    },
    clientErrorHandler: (err: Error & { code?: string }, socket: Duplex) =>
      answerClientError(err, socket, maxHeaderSize),
  };
}

function frameworkProblem(error: Error & { code?: string }, maxParamLength: number): Problem {
  if (error.code === "FST_ERR_MAX_PARAM_LENGTH") {
    return problemOf(
      414,
      "URI too long",
      `a segment of the path is longer than ${maxParamLength} characters`,
      { field: "path", limit: maxParamLength },
    );
  }
  if (error.code === "FST_ERR_BAD_URL") {
    return problemOf(400, "malformed URL", `the path is not a valid URL: ${error.message}`, {
      field: "path",
    });
  }
  return problemOf(500, "internal error", error.message);
}

/** One Ajv complaint, as Fastify attaches it to a validation error. */
export interface ValidationIssue {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** Ajv's complaint as a problem naming the field (dotted path) and the limit it broke. */
export function validationProblem(
  issues: ValidationIssue[],
  context = "request",
  status = 400,
): ProblemError {
  const issue = issues[0];
  const path = (issue?.instancePath ?? "").replace(/^\//, "").replaceAll("/", ".");
  const member = (issue?.params.missingProperty ?? issue?.params.additionalProperty) as string | undefined;
  const field = [path, member].filter(Boolean).join(".") || context;
  const limitKey = ["limit", "pattern", "format", "allowedValues"].find((k) => k in (issue?.params ?? {}));
  const limit = limitKey ? (issue!.params[limitKey] as string | number | string[]) : undefined;
  const title = status === 422 ? "unprocessable" : "invalid request";
  return new ProblemError(status, title, `${field}: ${issue?.message ?? issue?.keyword ?? "invalid"}`, {
    field,
    ...(limit !== undefined ? { limit: Array.isArray(limit) ? limit.join(", ") : limit } : {}),
  });
}

type ServerError = Error & {
  code?: string;
  statusCode?: number;
  validation?: ValidationIssue[];
  validationContext?: string;
};

/** Fastify's own request errors, each as the problem it is. */
function fastifyProblem(err: ServerError, bodyLimit: number): ProblemError | undefined {
  switch (err.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new ProblemError(413, "body too large", `the body is larger than ${bodyLimit} bytes`, {
        field: "body",
        limit: bodyLimit,
      });
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new ProblemError(400, "malformed request", "the body's size does not match its Content-Length", {
        field: "content-length",
      });
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new ProblemError(
        415,
        "unsupported media type",
        `the body's media type is not one this server reads`,
        {
          field: "content-type",
        },
      );
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return new ProblemError(400, "invalid request", `body: ${err.message}`, { field: "body" });
    default:
      return undefined;
  }
}

export interface ProblemHandling extends ProblemServerLimits {
  /** The server's own error kinds as problems (undefined: not one of them). */
  translate?: (err: Error) => ProblemError | undefined;
  /** Status of a body that breaks its route's schema (DCM's is 422; default 400). */
  bodyValidationStatus?: number;
  /** Not-found answers are the server's own (a single-page application's pages). */
  ownNotFound?: boolean;
  /** The detail of a 500 (default: the error's message). */
  describeInternal?: (err: Error) => string;
  /** Server errors are logged here, naming the server. */
  logger?: Logger;
  what?: string;
  /** Bounds on discarding the rest of an oversized body (tests). */
  discard?: { ms?: number; bytes?: number };
}

/** Reads the rest of a request's body and throws it away, within the bounds. */
export function discardRest(
  raw: IncomingMessage,
  bounds: { ms?: number; bytes?: number } = {},
): Promise<void> {
  if (raw.complete || raw.destroyed) return Promise.resolve();
  const maxBytes = bounds.bytes ?? OVERSIZED_BODY_DISCARD_BYTES;
  return new Promise<void>((resolve) => {
    let discarded = 0;
    const done = () => {
      clearTimeout(timer);
      raw.off("data", count);
      resolve();
    };
    const count = (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > maxBytes) done();
    };
    const timer = setTimeout(done, bounds.ms ?? OVERSIZED_BODY_DISCARD_MS);
    timer.unref();
    raw.on("data", count).once("end", done).once("error", done).once("close", done);
    raw.resume();
  });
}

/** Sends a problem as the reply (with its headers). */
export function replyProblem(reply: FastifyReply, err: ProblemError) {
  for (const [name, value] of Object.entries(err.headers)) reply.header(name, value);
  return reply.code(err.status).type(PROBLEM_CONTENT_TYPE).send(err.problem);
}

/**
 * Makes every error and not-found answer of `app` a problem. The instance must be built with
 * {@link problemServerOptions} for the same limits (Fastify's router and parser errors).
 */
export function serveProblems(app: FastifyInstance, handling: ProblemHandling): void {
  const what = handling.what ?? "request";
  app.setErrorHandler(async (err: ServerError, request, reply) => {
    if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE") await discardRest(request.raw, handling.discard);
    const problem = problemFor(err, handling);
    if (problem.status >= 500) (handling.logger ?? request.log).error({ err }, `${what} failed`);
    return replyProblem(reply, problem);
  });
  if (!handling.ownNotFound) {
    app.setNotFoundHandler((request, reply) => replyProblem(reply, routeNotFound(request)));
  }
}

export function routeNotFound(request: FastifyRequest): ProblemError {
  return new ProblemError(404, "not found", `no route ${request.method} ${request.url.split("?")[0]}`);
}

function problemFor(err: ServerError, handling: ProblemHandling): ProblemError {
  if (err instanceof ProblemError) return err;
  const own = handling.translate?.(err);
  if (own) return own;
  if (err.validation) {
    const context = err.validationContext ?? "request";
    return validationProblem(
      err.validation,
      context,
      context === "body" ? handling.bodyValidationStatus : 400,
    );
  }
  const fastify = fastifyProblem(err, handling.bodyLimit);
  if (fastify) return fastify;
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    return new ProblemError(err.statusCode, statusTitle(err.statusCode), err.message);
  }
  return new ProblemError(500, "internal error", handling.describeInternal?.(err) ?? err.message);
}
