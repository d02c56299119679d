/**
 * `owner-auth`: only the runtime's own user passes — with a token of tenantry's identity service
 * (`Authorization: Bearer …`), or with the session cookie the module sets from such a token on its
 * sign-in page (`/r/<token>/.tenantry/session`). Tokens are checked through the Authenticator, so
 * expiry and revocation apply; neither the token nor the cookie reaches the runtime.
 *
 * Settings (all optional): `cookieName`; `allowGroups` (comma-separated groups whose members may
 * also pass, e.g. operators); `inject.<Header-Name>` headers added to every forwarded request.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Identity } from "../../../identity/index.js";
import { escapeHtml, page, refuseUpgrade, sendHtml, sendProblem, wantsJson } from "../respond.js";
import { RESERVED_SEGMENT } from "../route.js";
import { headerSettings } from "./inject-headers.js";
import {
  type ModuleSettings,
  ModuleSettingsError,
  type ProxyRequestOptions,
  type ServiceModule,
  type ServiceModuleContext,
} from "./spi.js";

export const OWNER_AUTH_MODULE = "owner-auth";
export const DEFAULT_SESSION_COOKIE = "tenantry-runtime-session";
const SESSION_PATH = `${RESERVED_SEGMENT}session`;
const LOGOUT_PATH = `${RESERVED_SEGMENT}logout`;
const COOKIE_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/;
const INJECT_PREFIX = "inject.";
const MAX_FORM_BYTES = 32 * 1024;

interface Settings {
  cookieName: string;
  allowGroups: Set<string>;
  inject: [string, string][];
}

export function parseOwnerAuthSettings(settings: ModuleSettings): Settings {
  for (const key of Object.keys(settings)) {
    if (key !== "cookieName" && key !== "allowGroups" && !key.startsWith(INJECT_PREFIX)) {
      throw new ModuleSettingsError(
        key,
        `unknown setting (known: cookieName, allowGroups, ${INJECT_PREFIX}<Header-Name>)`,
      );
    }
  }
  const cookieName = settings.cookieName ?? DEFAULT_SESSION_COOKIE;
  if (!COOKIE_NAME.test(cookieName)) {
    throw new ModuleSettingsError("cookieName", "must be 1 to 64 cookie-name characters (RFC 6265)");
  }
  const allowGroups = new Set(
    (settings.allowGroups ?? "")
      .split(",")
      .map((g) => g.trim())
      .filter(Boolean),
  );
  return { cookieName, allowGroups, inject: headerSettings(settings, INJECT_PREFIX) };
}

type Credential = { token: string; from: "header" | "cookie" } | undefined;

/** The caller's token: a bearer header, else the session cookie. */
function credential(request: IncomingMessage, current: Settings): Credential {
  const authorization = request.headers.authorization;
  if (authorization) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match) return { token: match[1]!, from: "header" };
  }
  const cookie = readCookie(request.headers.cookie, current.cookieName);
  return cookie ? { token: cookie, from: "cookie" } : undefined;
}

/** Strips the credential from what the runtime receives and adds the configured headers. */
function amend(request: IncomingMessage, options: ProxyRequestOptions, current: Settings): void {
  if (request.headers.authorization) options.removeHeader("authorization");
  const cookies = request.headers.cookie;
  if (cookies) {
    const rest = withoutCookie(cookies, current.cookieName);
    if (rest === undefined) options.removeHeader("cookie");
    else if (rest !== cookies) options.setHeader("cookie", rest);
  }
  for (const [name, value] of current.inject) options.setHeader(name, value);
}

export function ownerAuthModule(context: ServiceModuleContext): ServiceModule {
  let settings: Settings | undefined;
  const authenticator = context.authenticator;

  /** The identity behind the credential when it may use this runtime; otherwise why not. */
  const decide = async (
    found: Credential,
    options: ProxyRequestOptions,
    current: Settings,
  ): Promise<{ ok: true; identity: Identity } | { ok: false; status: 401 | 403; detail: string }> => {
    if (!found)
      return { ok: false, status: 401, detail: "sign in: this runtime is served to its owner only" };
    const result = await authenticator!.authenticate(found.token);
    if (!result.authenticated) return { ok: false, status: 401, detail: `not signed in: ${result.reason}` };
    const { identity } = result;
    const owner = identity.username === options.route.user && identity.tenant === options.route.tenant;
    if (owner || identity.groups.some((g) => current.allowGroups.has(g))) return { ok: true, identity };
    return { ok: false, status: 403, detail: "this runtime belongs to another user" };
  };

  return {
    init(next) {
      if (!authenticator)
        throw new Error("owner-auth needs tenantry's Authenticator, and this proxy has none");
      settings = parseOwnerAuthSettings(next);
    },

    async http(request, response, options) {
      const current = settings!;
      const path = options.rest.split("?")[0]!;
      if (path === SESSION_PATH) {
        await session(request, response, options, current);
        return "handled";
      }
      if (path === LOGOUT_PATH) {
        sendHtml(response, 200, signInPage(options, "Signed out."), {
          "set-cookie": sessionCookie(current.cookieName, "", options, 0),
        });
        return "handled";
      }
      const found = credential(request, current);
      const decision = await decide(found, options, current);
      if (!decision.ok) {
        refuse(request, response, options, decision.status, decision.detail, current, found);
        return "handled";
      }
      amend(request, options, current);
      return "continue";
    },

    async wss(request, socket, _head, options) {
      const current = settings!;
      const decision = await decide(credential(request, current), options, current);
      if (!decision.ok) {
        refuseUpgrade(socket as Duplex, {
          status: decision.status,
          title: decision.status === 401 ? "unauthorized" : "forbidden",
          detail: decision.detail,
        });
        return "handled";
      }
      amend(request, options, current);
      return "continue";
    },
  };

  async function session(
    request: IncomingMessage,
    response: ServerResponse,
    options: ProxyRequestOptions,
    current: Settings,
  ): Promise<void> {
    if (request.method !== "POST") {
      sendHtml(response, 200, signInPage(options));
      return;
    }
    const form = await readForm(request);
    if (form === undefined) {
      sendProblem(response, {
        status: 413,
        title: "too large",
        detail: `the sign-in form is larger than ${MAX_FORM_BYTES} bytes`,
        extra: { field: "body", limit: MAX_FORM_BYTES },
      });
      return;
    }
    const token = form.get("token")?.trim() ?? "";
    const decision = await decide(token ? { token, from: "header" } : undefined, options, current);
    if (!decision.ok) {
      sendHtml(response, decision.status, signInPage(options, decision.detail));
      return;
    }
    const expiresAt = decision.identity.expiresAt?.getTime();
    const maxAge = expiresAt ? Math.max(0, Math.floor((expiresAt - Date.now()) / 1000)) : 8 * 3600;
    response.writeHead(303, {
      location: options.basePath,
      "set-cookie": sessionCookie(current.cookieName, token, options, maxAge),
      "cache-control": "no-store",
      "content-length": "0",
    });
    response.end();
  }
}

function refuse(
  request: IncomingMessage,
  response: ServerResponse,
  options: ProxyRequestOptions,
  status: 401 | 403,
  detail: string,
  current: Settings,
  found: Credential,
): void {
  // A cookie that no longer authenticates (expired, revoked) is dropped.
  const clear = found?.from === "cookie" && status === 401;
  const cookieHeader: Record<string, string> = clear
    ? { "set-cookie": sessionCookie(current.cookieName, "", options, 0) }
    : {};
  if (wantsJson(request) || request.method !== "GET") {
    sendProblem(response, {
      status,
      title: status === 401 ? "unauthorized" : "forbidden",
      detail,
      headers: { ...cookieHeader, ...(status === 401 ? { "www-authenticate": "Bearer" } : {}) },
    });
    return;
  }
  sendHtml(response, status, signInPage(options, detail), cookieHeader);
}

function sessionCookie(name: string, value: string, options: ProxyRequestOptions, maxAge: number): string {
  return `${name}=${value}; Path=${options.basePath}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${options.secure ? "; Secure" : ""}`;
}

function signInPage(options: ProxyRequestOptions, message?: string): string {
  return page(
    "Sign in to your runtime",
    `<h1>Sign in to ${escapeHtml(options.route.service)}/${escapeHtml(options.route.instance)}</h1>
${message ? `<p><strong>${escapeHtml(message)}</strong></p>` : ""}
<p>This runtime is served to its owner only. Paste a token of tenantry's identity service
(<code>tenantry login</code> writes one into its kubeconfig):</p>
<form method="post" action="${escapeHtml(options.basePath)}.tenantry/session">
<input type="password" name="token" autocomplete="off" required aria-label="token">
<button type="submit">Sign in</button></form>`,
  );
}

export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

/** The Cookie header without `name`; undefined when nothing else is left. */
export function withoutCookie(header: string, name: string): string | undefined {
  const kept = header
    .split(";")
    .map((part) => part.trim())
    .filter((part) => part && part.slice(0, Math.max(0, part.indexOf("="))).trim() !== name);
  return kept.length ? kept.join("; ") : undefined;
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
