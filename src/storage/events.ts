import { hostname } from "node:os";
import { type CoreV1Api, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { describeError } from "../kube/index.js";

export interface EventTarget {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  uid?: string;
}

/** A repeat of the same event on the same object within this time raises its count instead of adding an Event. */
const REPEAT_MS = 10 * 60_000;

/**
 * Events as Kubernetes' external provisioners record them (reportingController is the provisioner
 * name): one Event per object, reason and message, its count raised on repeats.
 */
export class StorageEvents {
  private readonly recent = new Map<string, { name: string; namespace: string; count: number; at: number }>();
  private readonly instance = `${hostname()}-${process.pid}`;

  constructor(
    private readonly core: CoreV1Api,
    private readonly component: string,
    private readonly logger: Logger,
  ) {}

  normal(target: EventTarget, reason: string, message: string): void {
    this.record(target, "Normal", reason, message);
  }

  warning(target: EventTarget, reason: string, message: string): void {
    this.record(target, "Warning", reason, message);
  }

  private record(target: EventTarget, type: "Normal" | "Warning", reason: string, message: string): void {
    const key = JSON.stringify([
      target.kind,
      target.namespace,
      target.name,
      target.uid,
      type,
      reason,
      message,
    ]);
    const now = Date.now();
    const seen = this.recent.get(key);
    if (seen && now - seen.at < REPEAT_MS) {
      seen.count++;
      seen.at = now;
      this.core
        .patchNamespacedEvent(
          {
            name: seen.name,
            namespace: seen.namespace,
            body: { count: seen.count, lastTimestamp: new Date(now).toISOString() },
          },
          setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
        )
        .catch((err) => this.logger.debug({ error: describeError(err) }, "could not update event"));
      return;
    }
    const namespace = target.namespace ?? "default";
    const name = `${target.name}.${(now * 1_000_000 + Math.floor(Math.random() * 1_000_000)).toString(16)}`;
    this.recent.set(key, { name, namespace, count: 1, at: now });
    if (this.recent.size > 10_000) this.recent.delete(this.recent.keys().next().value!);
    const time = new Date(now).toISOString();
    this.core
      .createNamespacedEvent({
        namespace,
        body: {
          metadata: { name, namespace },
          involvedObject: {
            apiVersion: target.apiVersion,
            kind: target.kind,
            ...(target.namespace ? { namespace: target.namespace } : {}),
            name: target.name,
            ...(target.uid ? { uid: target.uid } : {}),
          },
          reason,
          message,
          type,
          source: { component: this.component },
          reportingComponent: this.component,
          reportingInstance: this.instance,
          count: 1,
          firstTimestamp: time as unknown as Date,
          lastTimestamp: time as unknown as Date,
        },
      })
      .catch((err) => this.logger.debug({ reason, error: describeError(err) }, "could not record event"));
  }
}
