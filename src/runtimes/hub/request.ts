/** Reading JupyterHub clients' requests: bodies as they send them, query flags, numbers and timestamps. */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HubError } from "./caller.js";

/** JSON bodies as JupyterHub's clients send them: empty, without a content type, or as text. */
export function lenientJson(api: FastifyInstance): void {
  api.removeAllContentTypeParsers();
  api.addContentTypeParser("*", { parseAs: "string" }, (_request, body, done) => {
    const text = String(body).trim();
    if (!text) return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new HubError(400, "Body must be valid JSON"), undefined);
    }
  });
}

export function truthy(request: FastifyRequest, name: string): boolean {
  const value = (request.query as Record<string, unknown>)[name];
  return value !== undefined && value !== "false" && value !== "0";
}

export function integer(value: string | undefined, field: string, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new HubError(400, `${field}: ${value} is not a whole number ≥ 0`);
  return field === "limit" && n === 0 ? fallback : n;
}

export function pageUrl(request: FastifyRequest, offset: number, limit: number): string {
  const url = new URL(request.url, `${request.protocol}://${request.headers.host ?? request.host}`);
  url.searchParams.set("offset", String(offset));
  url.searchParams.set("limit", String(limit));
  return url.toString();
}

/** A reported time, no later than now (a client's clock ahead does not postpone culling). */
export function timestamp(value: unknown, message: string): Date {
  const time = typeof value === "string" ? new Date(value) : undefined;
  if (!time || !Number.isFinite(time.getTime())) throw new HubError(400, `Not a valid timestamp: ${message}`);
  return new Date(Math.min(time.getTime(), Date.now()));
}
