/**
 * Culling (what jupyterhub-idle-culler does for JupyterHub, decided here from the Runtime itself):
 * a running runtime idle for its idle timeout, or running for its maximum age, is stopped. Its
 * last activity is the latest of what the proxy saw (requests and WebSocket frames, written to
 * `status.lastActivity` at an interval, so up to that interval late) and what its agent reported
 * (written at once); a runtime never used counts from when it last became Running. A runtime may
 * ask for a shorter timeout or age than its service's, never a longer one.
 */
import { PatchStrategy } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { type ClusterClient, statusCode as statusOf } from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import { RUNTIME_CULLED_ANNOTATION, type Runtime } from "../api/runtime.js";
import type { RuntimeService } from "../api/runtime-service.js";
import { recordRuntimeEvent } from "../events.js";

export interface CullingLimits {
  idleTimeoutSeconds?: number;
  maxAgeSeconds?: number;
}

/**
 * The runtime's own limits within its service's bounds (the smaller of each; a service's absent
 * bound is none). `idleCulledBy` names what else culls it when idle (a BackupPolicy that backs it
 * up first): idle culling is then left to it, a maximum age still applies.
 */
export function cullingLimits(
  service: Pick<RuntimeService, "spec"> | undefined,
  runtime: Runtime,
  idleCulledBy?: (runtime: Runtime) => string | undefined,
): CullingLimits {
  const pick = (bound: number | undefined, own: number | undefined) =>
    bound === undefined ? own : own === undefined ? bound : Math.min(bound, own);
  const idle = pick(service?.spec.idleTimeoutSeconds, runtime.spec.idleTimeoutSeconds);
  const age = pick(service?.spec.maxAgeSeconds, runtime.spec.maxAgeSeconds);
  return {
    ...(idle !== undefined && !idleCulledBy?.(runtime) ? { idleTimeoutSeconds: idle } : {}),
    ...(age !== undefined ? { maxAgeSeconds: age } : {}),
  };
}

const time = (text: string | undefined) => {
  const ms = text ? Date.parse(text) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
};

/** When the runtime was last used in its current session (ms): its last activity, else when it became Running. */
export function lastUsed(runtime: Pick<Runtime, "status">): number | undefined {
  const started = time(runtime.status?.startedAt);
  const active = time(runtime.status?.lastActivity);
  if (started === undefined) return active;
  // Activity from before this session (a resume) does not count.
  return active === undefined ? started : Math.max(started, active);
}

export type CullDecision =
  | { cull: true; reason: "Idle" | "MaxAge"; message: string; idleSeconds: number }
  | { cull: false /** When to look again (ms from now), if ever. */; recheckMs?: number };

/**
 * Whether a Running runtime is to be culled at `now`. `activityLagMs` is how late proxy activity
 * may reach the Runtime (the proxy's write interval): the idle deadline waits that much longer, so
 * a request just before it is never missed.
 */
export function cullDecision(
  runtime: Pick<Runtime, "status">,
  limits: CullingLimits,
  now: number,
  activityLagMs = 0,
): CullDecision {
  const started = time(runtime.status?.startedAt);
  const used = lastUsed(runtime);
  if (started === undefined || used === undefined) return { cull: false };
  const idleSeconds = Math.max(0, Math.floor((now - used) / 1000));
  const deadlines: number[] = [];
  if (limits.maxAgeSeconds !== undefined) {
    const at = started + limits.maxAgeSeconds * 1000;
    if (now >= at) {
      return {
        cull: true,
        reason: "MaxAge",
        message: `running for ${Math.floor((now - started) / 1000)} s, its maximum age is ${limits.maxAgeSeconds} s (maxAgeSeconds); idle for ${idleSeconds} s`,
        idleSeconds,
      };
    }
    deadlines.push(at);
  }
  if (limits.idleTimeoutSeconds !== undefined) {
    const at = used + limits.idleTimeoutSeconds * 1000 + activityLagMs;
    if (now >= at) {
      return {
        cull: true,
        reason: "Idle",
        message: `idle for ${idleSeconds} s (last activity ${new Date(used).toISOString()}), its idle timeout is ${limits.idleTimeoutSeconds} s (idleTimeoutSeconds)`,
        idleSeconds,
      };
    }
    deadlines.push(at);
  }
  return deadlines.length ? { cull: false, recheckMs: Math.min(...deadlines) - now } : { cull: false };
}

/**
 * Stops a running runtime because it was culled: its spec says Stopped, with the reason in an
 * annotation the stopped runtime's status gives, and an Event `Culled` says why (the idle time).
 * Conditional on the version decided from. Resolves false when the runtime changed meanwhile.
 */
export async function cullRuntime(
  client: ClusterClient,
  runtime: Runtime,
  message: string,
  logger: Logger,
  component: string,
): Promise<boolean> {
  try {
    await client.objects.patchRaw(
      {
        apiVersion: TENANTS_API_VERSION,
        kind: "Runtime",
        metadata: {
          name: runtime.metadata!.name!,
          namespace: runtime.metadata!.namespace!,
          resourceVersion: runtime.metadata!.resourceVersion!,
          annotations: {
            [RUNTIME_CULLED_ANNOTATION]: JSON.stringify({
              reason: "Culled",
              message: `culled: ${message}`,
              // A spec change makes the next generation.
              generation: (runtime.metadata?.generation ?? 0) + 1,
            }),
          },
        },
        spec: { desiredState: "Stopped" },
      },
      PatchStrategy.MergePatch,
    );
  } catch (err) {
    if (statusOf(err) === 409 || statusOf(err) === 404) return false;
    throw err;
  }
  logger.info(
    { runtime: `${runtime.metadata?.namespace}/${runtime.metadata?.name}` },
    `runtime culled: ${message}`,
  );
  await recordRuntimeEvent(client, runtime, { reason: "Culled", message, component }, logger);
  return true;
}
