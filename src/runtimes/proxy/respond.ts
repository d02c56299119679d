/** Answers the proxy (and its modules) give themselves: problem bodies, small pages, socket refusals. */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import {
  type Problem as CommonProblem,
  problemOf,
  sendProblem as sendCommonProblem,
  writeProblemToSocket,
} from "../../common/index.js";

export interface Problem {
  status: number;
  title: string;
  detail: string;
  /** More members of the problem body (phase, reason, field, …). */
  extra?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** The RFC 9457 body of a proxy's problem. */
export function problemBody(problem: Problem): CommonProblem {
  return problemOf(problem.status, problem.title, problem.detail, problem.extra);
}

/** An RFC 9457 problem; a response already under way is cut off instead. */
export function sendProblem(res: ServerResponse, problem: Problem): void {
  sendCommonProblem(res, problemBody(problem), problem.headers);
}

export function sendHtml(
  res: ServerResponse,
  status: number,
  html: string,
  headers: Record<string, string | string[]> = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, {
    ...headers,
    "content-type": "text/html; charset=utf-8",
    "content-length": Buffer.byteLength(html),
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
  });
  res.end(html);
}

/** Refuses an upgrade on its raw socket with a problem body, then closes it. */
export function refuseUpgrade(socket: Duplex, problem: Problem): void {
  writeProblemToSocket(socket, problemBody(problem), problem.headers);
}

/** Whether the caller asked for JSON rather than a page (API clients, the CLI, fetch with Accept). */
export function wantsJson(request: IncomingMessage): boolean {
  const accept = request.headers.accept;
  if (!accept) return false;
  return accept.includes("json") && !accept.includes("text/html");
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** A small self-contained page (no outside assets), styled alike for every answer of the proxy. */
export function page(title: string, body: string, head = ""): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>${head}
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem;color:#1d2330}
h1{font-size:1.4rem}ol{padding-left:1.2rem}li{margin:.2rem 0}.Done{color:#1a7f37}.InProgress{color:#9a6700}
.Failed{color:#cf222e}.Pending{color:#6e7781}code{background:#f3f4f6;padding:0 .25rem}
input{font:inherit;width:100%;box-sizing:border-box;margin:.3rem 0}button{font:inherit}
</style></head><body>${body}</body></html>`;
}
