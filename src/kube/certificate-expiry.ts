/**
 * What every certificate tenantry keeps valid reports: its expiry as one shared metric, and
 * Events on the object the certificate belongs to (a renewal, a failure, an expiry).
 */
import { hostname } from "node:os";
import type { CoreV1Api } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { Gauge, type Registry } from "prom-client";

export const CERTIFICATE_EXPIRY_METRIC = "tenantry_certificate_expiration_timestamp_seconds";

/** The expiry gauge of `registry`, made on first use: the webhook and peer certificates share it. */
export function certificateExpiryGauge(registry: Registry): Gauge<"certificate"> {
  const existing = registry.getSingleMetric(CERTIFICATE_EXPIRY_METRIC);
  if (existing) return existing as Gauge<"certificate">;
  return new Gauge({
    name: CERTIFICATE_EXPIRY_METRIC,
    help: "When a certificate tenantry serves or uses expires (Unix time).",
    labelNames: ["certificate"],
    registers: [registry],
  });
}

/** The object an Event is about. Cluster-scoped objects' Events go to namespace "default", as kubectl looks for them. */
export interface CertificateEventTarget {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
}

/** Records an Event; a failure to record is logged, never thrown. */
export async function recordCertificateEvent(
  core: CoreV1Api,
  target: CertificateEventTarget,
  event: { type: "Normal" | "Warning"; reason: string; message: string; component: string },
  logger: Logger,
): Promise<void> {
  const namespace = target.namespace ?? "default";
  const at = new Date();
  try {
    await core.createNamespacedEvent({
      namespace,
      body: {
        metadata: { generateName: `${target.name}.`, namespace },
        involvedObject: {
          apiVersion: target.apiVersion,
          kind: target.kind,
          name: target.name,
          ...(target.namespace ? { namespace: target.namespace } : {}),
          ...(target.uid ? { uid: target.uid } : {}),
        },
        type: event.type,
        reason: event.reason,
        message: event.message.slice(0, 1024),
        source: { component: "tenantry", host: hostname() },
        reportingComponent: event.component,
        reportingInstance: `${hostname()}-${process.pid}`,
        firstTimestamp: at,
        lastTimestamp: at,
        count: 1,
      },
    });
  } catch (err) {
    logger.warn({ err, reason: event.reason }, "recording an Event failed");
  }
}

/** {@link recordCertificateEvent} is not about certificates only: an Event about any object. */
export const recordEvent = recordCertificateEvent;
