/** What route files registered beside the Admin API's own routes get of it. */
import type { FastifyRequest } from "fastify";
import type { Logger } from "pino";
import type { ClusterClient, Informer } from "../../kube/index.js";
import type { Runtime } from "../api/runtime.js";
import type { RuntimeService } from "../api/runtime-service.js";
import type { AgentCaller, UserCaller } from "./callers.js";

/** Who a call acts for, and how. */
export interface Acting {
  caller: UserCaller;
  /** The caller acts for another user (a delegation, or a runtime's agent). */
  delegated: boolean;
  agent?: AgentCaller;
}

export interface ActivityRouteContext {
  client: ClusterClient;
  services: Informer<RuntimeService>;
  logger: Logger;
  idleCulledBy?: (runtime: Runtime) => string | undefined;
  /** How late proxy activity may reach a Runtime (the proxy's write interval). */
  activityLagMs: number;
  /** An error the Admin API answers as application/problem+json. */
  problem(status: number, title: string, detail: string, extra?: Record<string, unknown>): Error;
  /**
   * The runtime the request's path names, when the caller is that runtime's own agent (its pod's
   * projected token); otherwise throws the problem to answer.
   */
  agentsRuntime(request: FastifyRequest): Promise<Runtime>;
}
