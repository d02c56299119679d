/** Kubernetes Events about a Runtime (`kubectl describe runtime` shows them). */
import type { Logger } from "pino";
import { type ClusterClient, describeError } from "../kube/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import type { Runtime } from "./api/runtime.js";

export interface RuntimeEvent {
  reason: string;
  message: string;
  type?: "Normal" | "Warning";
  /** Who reports it, e.g. `tenantry-runtimes-admin`. */
  component: string;
}

/** Records `event` on `runtime`; a failure to record is logged, never thrown. */
export async function recordRuntimeEvent(
  client: ClusterClient,
  runtime: Runtime,
  event: RuntimeEvent,
  logger: Logger,
): Promise<void> {
  const namespace = runtime.metadata!.namespace!;
  const now = new Date();
  try {
    await client.core.createNamespacedEvent({
      namespace,
      body: {
        metadata: { generateName: `${runtime.metadata!.name}.`, namespace },
        involvedObject: {
          apiVersion: TENANTS_API_VERSION,
          kind: "Runtime",
          name: runtime.metadata!.name!,
          namespace,
          ...(runtime.metadata?.uid ? { uid: runtime.metadata.uid } : {}),
        },
        reason: event.reason,
        message: event.message.slice(0, 1024),
        type: event.type ?? "Normal",
        source: { component: event.component },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      },
    });
  } catch (err) {
    logger.warn({ err: describeError(err), reason: event.reason }, "could not record an Event on a runtime");
  }
}
