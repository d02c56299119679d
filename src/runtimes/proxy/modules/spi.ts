/**
 * The service-module SPI (Vasilenko & Kurapati §3.1, Table 1): a module adds a service's own behaviour to
 * the proxy's request handling — authentication, authorization, headers the service expects.
 * `init` runs when the proxy starts and again whenever the module's Secret changes; the optional
 * `http` and `wss` hooks see every request and WebSocket upgrade of the service's runtimes before
 * they are forwarded, and may answer them themselves (deny) or amend what is forwarded.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import type { Authenticator } from "../../../identity/index.js";
import type { RouteView } from "../route.js";

/** The module's Secret, key by key, decoded as UTF-8 (`{}` when the service names no Secret). */
export type ModuleSettings = Readonly<Record<string, string>>;

/**
 * What a hook decided: `continue` (or nothing) forwards the request, amended as the hook asked;
 * `handled` means the hook answered it (wrote the response, or the socket) and the proxy does no more.
 */
export type HookOutcome = "continue" | "handled" | undefined;

/** The proxy options a hook is given (Table 1's third parameter). */
export interface ProxyRequestOptions {
  /** The runtime the request is for (never another's: the route token chose it). */
  readonly route: RouteView;
  /** The part of the path after `/r/<token>` ("" or starting with `/`, query included). */
  readonly rest: string;
  /** `/r/<token>/`: where the runtime is served, e.g. for cookie paths and redirects. */
  readonly basePath: string;
  /** The caller reached the proxy over TLS (directly, or as X-Forwarded-Proto says when trusted). */
  readonly secure: boolean;
  /** Sets a header on the forwarded request, replacing the caller's of that name. */
  setHeader(name: string, value: string): void;
  /** Keeps a header of the caller from reaching the backend. */
  removeHeader(name: string): void;
}

export interface ServiceModule {
  /**
   * (Re)configures the module. Throws with a message naming the setting when the settings are
   * unusable: the service's routes then answer 503 with that message until a good Secret comes.
   */
  init(settings: ModuleSettings): void | Promise<void>;
  http?(
    request: IncomingMessage,
    response: ServerResponse,
    options: ProxyRequestOptions,
  ): HookOutcome | Promise<HookOutcome>;
  /** `head` is the first packet of the upgraded stream (may be empty). */
  wss?(
    request: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    options: ProxyRequestOptions,
  ): HookOutcome | Promise<HookOutcome>;
  /** The module is no longer used (its service was removed or names another module). */
  close?(): void;
}

/** What a module may use besides its settings. */
export interface ServiceModuleContext {
  /** The service whose runtimes the module serves. */
  service: string;
  /** Validates tokens of tenantry's identity providers. */
  authenticator?: Authenticator;
  logger: Logger;
}

export type ServiceModuleFactory = (context: ServiceModuleContext) => ServiceModule;

/** A module's complaint about its settings: names the key, as every bad-input error here does. */
export class ModuleSettingsError extends Error {
  override readonly name = "ModuleSettingsError";
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(`setting ${key}: ${message}`);
  }
}
