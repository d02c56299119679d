/**
 * `POST /services/{user}/{service}/{instance}/activity`: a runtime's agent reports the runtime's
 * own last activity (Jupyter Server's `last_activity`, say). A time later than what the Runtime
 * shows is written to `status.lastActivity` at once (as the proxy writes its own, conditional and
 * only forward; a time in the future counts as now); the answer is what culling then counts, so
 * the agent knows when its runtime will be idle.
 */
import type { FastifyInstance } from "fastify";
import { formatKubeTime } from "../../kube/index.js";
import { cullingLimits, lastUsed } from "../controller/culling.js";
import { KubeActivityWriter } from "../proxy/activity.js";
import type { ActivityRouteContext } from "./route-context.js";
import { ActivityAnswer, ActivityBody, InstanceParams } from "./schemas.js";

export function activityRoutes(
  api: FastifyInstance,
  context: ActivityRouteContext,
  problems: Record<number, unknown>,
): void {
  const writer = new KubeActivityWriter(context.client);
  api.post(
    "/services/:user/:service/:instance/activity",
    {
      schema: {
        summary:
          "The runtime's agent only: the runtime's own last activity, counted by culling; answers what culling counts.",
        params: InstanceParams,
        body: ActivityBody,
        response: { 200: ActivityAnswer, ...problems },
      },
    },
    async (request) => {
      const runtime = await context.agentsRuntime(request);
      const given = (request.body as ActivityBody | undefined)?.lastActivity;
      const reported = given === undefined ? 0 : Math.min(Date.parse(given), Date.now());
      const known = lastUsed(runtime) ?? 0;
      if (Math.floor(reported / 1000) * 1000 > known) {
        await writer.write(runtime, formatKubeTime(reported));
      }
      const service = context.services.get(undefined, runtime.spec.service);
      const limits = cullingLimits(service, runtime, context.idleCulledBy);
      return {
        lastActivity: new Date(Math.max(reported, known)).toISOString(),
        ...limits,
        ...(limits.idleTimeoutSeconds !== undefined
          ? { activityLagSeconds: Math.ceil(context.activityLagMs / 1000) }
          : {}),
      };
    },
  );
}
