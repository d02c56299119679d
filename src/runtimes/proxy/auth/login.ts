/**
 * The browser's way in, as JupyterHub's hub-auth does it: a request without a session is sent to
 * the login page (`/r/.tenantry/login?next=…&state=…`, the state also in a cookie of the route's
 * path); the login authenticates against tenantry's identity service (a password through its own
 * login endpoint, throttling included, or a token of any of its providers) and sends the browser
 * back to the route's callback with a one-time code valid for a minute; the callback opens the code
 * on the server, checks the state against the cookie, and sets the session cookie for that route's
 * path only, then goes on to `next`.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { LRUCache } from "lru-cache";
import type { Logger } from "pino";
import { Agent, fetch as undiciFetch } from "undici";
import { LOGIN_PATH } from "../../../identity/index.js";
import { escapeHtml, page, sendHtml } from "../respond.js";
import { parseRoutePath, RESERVED_SEGMENT, ROUTE_PREFIX, type RouteView } from "../route.js";
import { readCookie, SESSION_COOKIE, STATE_COOKIE, setCookie } from "./credentials.js";
import type { RouteGuard } from "./guard.js";
import type { SessionKeys } from "./keys.js";
import { open, seal } from "./sealed.js";

/** The login page: outside every route, so that no runtime serves it. */
export const LOGIN_PAGE = `${ROUTE_PREFIX}.tenantry/login`;
export const CALLBACK_SEGMENT = `${RESERVED_SEGMENT}callback`;
export const LOGOUT_SEGMENT = `${RESERVED_SEGMENT}logout`;
const CODE_SECONDS = 60;
const STATE_SECONDS = 600;
const STATE = /^[A-Za-z0-9_-]{22,64}$/;
const MAX_FORM_BYTES = 32 * 1024;
const MAX_NEXT_LENGTH = 4096;

/** Where the identity service's password login is (tenantry's access server), and its CA. */
export interface IdentityLoginEndpoint {
  url: string;
  caPem: string;
}

interface CodeValue {
  tok: string;
  /** The route token the code is for. */
  rt: string;
  st: string;
  next: string;
  /** One use only: remembered here once used. */
  n: string;
  exp: number;
}

export interface RuntimeLoginOptions {
  guard: RouteGuard;
  keys: SessionKeys;
  identityLogin?: IdentityLoginEndpoint;
  /** Identity providers that take passwords. */
  passwordProviders: () => string[];
  logger: Logger;
}

/** `next` when it is a path into a runtime (never another site), else undefined. */
export function safeNext(next: string | null | undefined): { path: string; token: string } | undefined {
  if (!next || next.length > MAX_NEXT_LENGTH || !next.startsWith(ROUTE_PREFIX) || /[\\\s]/.test(next)) {
    return undefined;
  }
  const route = parseRoutePath(next);
  return route ? { path: next, token: route.token } : undefined;
}

export class RuntimeLogin {
  private readonly usedCodes = new LRUCache<string, true>({ max: 100_000, ttl: CODE_SECONDS * 2000 });
  private readonly agent?: Agent;

  constructor(private readonly options: RuntimeLoginOptions) {
    if (options.identityLogin) this.agent = new Agent({ connect: { ca: options.identityLogin.caPem } });
  }

  async close(): Promise<void> {
    await this.agent?.close();
  }

  /** A browser without a session: to the login page, with a state only this browser holds. */
  redirect(response: ServerResponse, view: RouteView, rest: string, secure: boolean, clearSession: boolean) {
    const state = randomBytes(24).toString("base64url");
    const path = `${ROUTE_PREFIX}${view.token}/`;
    const next = `${ROUTE_PREFIX}${view.token}${rest.startsWith("/") ? rest : `/${rest}`}`;
    const cookies = [setCookie(STATE_COOKIE, state, { path, maxAgeSeconds: STATE_SECONDS, secure })];
    if (clearSession) cookies.push(setCookie(SESSION_COOKIE, "", { path, maxAgeSeconds: 0, secure }));
    response.writeHead(302, {
      location: `${LOGIN_PAGE}?next=${encodeURIComponent(next)}&state=${state}`,
      "set-cookie": cookies,
      "cache-control": "no-store",
      "content-length": "0",
    });
    response.end();
  }

  /** `GET` shows the login page; `POST` signs in and sends the browser to the route's callback. */
  async page(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const query = new URL(request.url ?? "/", "http://proxy").searchParams;
    if (request.method !== "POST") {
      const next = safeNext(query.get("next"));
      const state = query.get("state") ?? "";
      if (!next || !STATE.test(state))
        return this.badLogin(response, "open the runtime's address to sign in");
      return sendHtml(response, 200, this.loginPage(next.path, state));
    }
    const form = await readForm(request);
    if (!form) return this.badLogin(response, `the form is larger than ${MAX_FORM_BYTES} bytes`, 413);
    const next = safeNext(form.get("next"));
    const state = form.get("state") ?? "";
    if (!next) return this.badLogin(response, "next: must be a runtime's address, /r/<token>/…");
    if (!STATE.test(state))
      return this.badLogin(response, "state: must be the state the runtime's redirect gave");
    const signedIn = await this.signIn(form, request.socket.remoteAddress ?? "");
    if ("refused" in signedIn) {
      return sendHtml(response, signedIn.status, this.loginPage(next.path, state, signedIn.refused));
    }
    const code: CodeValue = {
      tok: signedIn.token,
      rt: next.token,
      st: state,
      next: next.path,
      n: randomBytes(16).toString("base64url"),
      exp: Date.now() + CODE_SECONDS * 1000,
    };
    const sealed = seal(this.options.keys.current(), "code", code);
    response.writeHead(303, {
      location: `${ROUTE_PREFIX}${next.token}${CALLBACK_SEGMENT}?code=${sealed}&state=${state}`,
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
      "content-length": "0",
    });
    response.end();
  }

  /** The route's callback: the code exchanged here for the session cookie, then on to `next`. */
  async callback(
    request: IncomingMessage,
    response: ServerResponse,
    view: RouteView,
    rest: string,
    secure: boolean,
  ) {
    const query = new URL(rest, "http://proxy").searchParams;
    const state = query.get("state") ?? "";
    const path = `${ROUTE_PREFIX}${view.token}/`;
    if (!state || readCookie(request.headers.cookie, STATE_COOKIE) !== state) {
      return this.badLogin(
        response,
        "this sign-in was not started in this browser (or took over 10 minutes): open the runtime's address again",
      );
    }
    const opened = open<CodeValue>(this.options.keys.current(), "code", query.get("code") ?? "");
    if (!opened.ok)
      return this.badLogin(response, `code: ${opened.reason}; open the runtime's address again`);
    const code = opened.value;
    if (code.rt !== view.token || code.st !== state || typeof code.tok !== "string" || !safeNext(code.next)) {
      return this.badLogin(response, "code: issued for another runtime or sign-in");
    }
    if (this.usedCodes.has(code.n))
      return this.badLogin(response, "code: already used; open the runtime's address again");
    this.usedCodes.set(code.n, true);
    const session = await this.options.guard.session(code.tok, view);
    if (!session) return this.badLogin(response, "the sign-in is no longer valid; sign in again", 401);
    response.writeHead(302, {
      location: code.next,
      "set-cookie": [
        setCookie(SESSION_COOKIE, session.cookie, { path, maxAgeSeconds: session.maxAgeSeconds, secure }),
        setCookie(STATE_COOKIE, "", { path, maxAgeSeconds: 0, secure }),
      ],
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
      "content-length": "0",
    });
    response.end();
  }

  /** Ends the route's session in this browser. */
  logout(response: ServerResponse, view: RouteView, secure: boolean): void {
    const path = `${ROUTE_PREFIX}${view.token}/`;
    sendHtml(
      response,
      200,
      page("Signed out", `<h1>Signed out</h1><p><a href="${escapeHtml(path)}">Sign in again</a></p>`),
      { "set-cookie": setCookie(SESSION_COOKIE, "", { path, maxAgeSeconds: 0, secure }) },
    );
  }

  /** A signed-in browser the runtime is not shared with. */
  forbidden(response: ServerResponse, view: RouteView, username: string): void {
    const path = `${ROUTE_PREFIX}${view.token}/`;
    sendHtml(
      response,
      403,
      page(
        "Not yours",
        `<h1>This runtime is not shared with you</h1>
<p>You are signed in as <strong>${escapeHtml(username)}</strong>. Its owner may share it with you.</p>
<p><a href="${escapeHtml(path)}${LOGOUT_SEGMENT.slice(1)}">Sign in as someone else</a></p>`,
      ),
    );
  }

  private async signIn(
    form: URLSearchParams,
    clientIp: string,
  ): Promise<{ token: string } | { refused: string; status: number }> {
    const token = form.get("token")?.trim();
    if (token) {
      const principal = await this.options.guard.principalOf(token);
      return principal
        ? { token }
        : { refused: "token: not valid (unknown, expired or revoked)", status: 401 };
    }
    const username = form.get("username")?.trim() ?? "";
    const password = form.get("password") ?? "";
    if (!username) return { refused: "username: required (or sign in with a token)", status: 400 };
    if (!password) return { refused: "password: required", status: 400 };
    const endpoint = this.options.identityLogin;
    if (!endpoint || !this.agent)
      return { refused: "this proxy takes tokens only: no identity service to check passwords", status: 503 };
    const body: Record<string, string> = { username, password };
    for (const field of ["provider", "domain"] as const) {
      const value = form.get(field)?.trim();
      if (value) body[field] = value;
    }
    // The identity service's own login: its throttling and first-login provisioning apply.
    const res = await undiciFetch(`${endpoint.url}${LOGIN_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": clientIp },
      body: JSON.stringify(body),
      dispatcher: this.agent,
    });
    const answer = (await res.json().catch(() => ({}))) as {
      token?: string;
      detail?: string;
      title?: string;
    };
    if (res.ok && answer.token) return { token: answer.token };
    return {
      refused: answer.detail ?? answer.title ?? `login failed (HTTP ${res.status})`,
      status: res.status >= 400 && res.status < 600 ? res.status : 502,
    };
  }

  private badLogin(response: ServerResponse, message: string, status = 400): void {
    sendHtml(
      response,
      status,
      page("Sign-in failed", `<h1>Sign-in failed</h1><p>${escapeHtml(message)}</p>`),
    );
  }

  private loginPage(next: string, state: string, message?: string): string {
    const providers = this.options.passwordProviders();
    const hidden = `<input type="hidden" name="next" value="${escapeHtml(next)}"><input type="hidden" name="state" value="${escapeHtml(state)}">`;
    const choose =
      providers.length > 1
        ? `<label>Identity provider <select name="provider">${providers.map((p) => `<option>${escapeHtml(p)}</option>`).join("")}</select></label>`
        : "";
    return page(
      "Sign in",
      `<h1>Sign in to open your runtime</h1>
${message ? `<p><strong>${escapeHtml(message)}</strong></p>` : ""}
<form method="post" action="${LOGIN_PAGE}">${hidden}
<label>User name <input name="username" autocomplete="username" autofocus></label>
<label>Password <input type="password" name="password" autocomplete="current-password"></label>
${choose}<button type="submit">Sign in</button></form>
<details><summary>Sign in with a token</summary>
<form method="post" action="${LOGIN_PAGE}">${hidden}
<label>Token of tenantry's identity service <input type="password" name="token" autocomplete="off"></label>
<button type="submit">Sign in</button></form></details>`,
    );
  }
}

async function readForm(request: IncomingMessage): Promise<URLSearchParams | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) return undefined;
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}
