/** What the JupyterHub REST API uses of the runtimes Admin API it is served beside. */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Informer } from "../../kube/index.js";
import type { CallerResult, UserCaller } from "../admin/callers.js";
import type { Acting } from "../admin/route-context.js";
import type { InstanceParams, ProgressFormat, RuntimeStatusBody, StartQuery } from "../admin/schemas.js";
import type { Runtime } from "../api/runtime.js";
import type { RuntimeService } from "../api/runtime-service.js";
import type { OAuthCodes } from "./oauth.js";
import type { HubTokens } from "./tokens.js";

export interface HubBackend {
  runtimes: Informer<Runtime>;
  services: Informer<RuntimeService>;
  tokens: HubTokens;
  /** One-time OAuth authorization codes. */
  oauthCodes: OAuthCodes;
  /** A token of tenantry's identity providers, or any token the cluster accepts. */
  authenticate(token: string): Promise<CallerResult>;
  /** Whether the user holds the delegation permission (JupyterHub's admin role here); cached briefly. */
  isAdmin(caller: UserCaller): Promise<boolean>;
  /** The Admin API's start: limits, plugin checks, create or resume. */
  start(
    acting: Acting,
    params: InstanceParams,
    body: Record<string, unknown>,
    query: StartQuery,
  ): Promise<Runtime>;
  stop(acting: Acting, runtime: Runtime): Promise<Runtime>;
  remove(acting: Acting, runtime: Runtime): Promise<void>;
  /** Writes activity to the runtime's `status.lastActivity` when later than what it shows. */
  writeActivity(runtime: Runtime, time: Date): Promise<void>;
  statusOf(runtime: Runtime, request: FastifyRequest): RuntimeStatusBody;
  publicBase(request: FastifyRequest): string;
  streamProgress(
    runtime: Runtime,
    request: FastifyRequest,
    reply: FastifyReply,
    format: ProgressFormat,
  ): void;
}
