import { type CoreV1Api, type CoreV1Event, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { describeError } from "../../kube/index.js";

export interface EventTarget {
  kind: "Pod" | "Node" | "PersistentVolumeClaim";
  namespace?: string;
  name: string;
  uid?: string;
  /** e.g. `spec.containers{web}`. */
  fieldPath?: string;
}

interface Recorded {
  name: string;
  namespace: string;
  count: number;
  firstTimestamp: string;
  lastTimestamp: string;
  flushed: number;
  timer?: NodeJS.Timeout;
}

/** Repeats of one event within this time are counted and written once. */
const REPEAT_WRITE_MS = 5_000;

/**
 * Events as the kubelet records them (source component "kubelet" and the node's name): a repeat
 * of the same reason and message on the same object raises the count of the one Event instead of
 * creating another, as the kubelet's event correlator does.
 */
export class EventRecorder {
  private readonly recorded = new Map<string, Recorded>();
  private stopped = false;

  constructor(
    private readonly core: CoreV1Api,
    private readonly component: { component: string; host: string },
    private readonly logger: Logger,
  ) {}

  normal(target: EventTarget, reason: string, message: string): void {
    this.record(target, "Normal", reason, message);
  }

  warning(target: EventTarget, reason: string, message: string): void {
    this.record(target, "Warning", reason, message);
  }

  private record(target: EventTarget, type: "Normal" | "Warning", reason: string, message: string): void {
    if (this.stopped) return;
    const now = new Date().toISOString();
    const key = JSON.stringify([
      target.kind,
      target.namespace,
      target.name,
      target.uid,
      target.fieldPath,
      type,
      reason,
      message,
    ]);
    const seen = this.recorded.get(key);
    if (seen) {
      seen.count++;
      seen.lastTimestamp = now;
      if (!seen.timer) {
        const wait = Math.max(0, seen.flushed + REPEAT_WRITE_MS - Date.now());
        seen.timer = setTimeout(() => this.flush(seen), wait);
        seen.timer.unref();
      }
      return;
    }
    const namespace = target.namespace ?? "default";
    const entry: Recorded = {
      name: `${target.name}.${(Date.now() * 1_000_000 + Math.floor(Math.random() * 1_000_000)).toString(16)}`,
      namespace,
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      flushed: Date.now(),
    };
    this.recorded.set(key, entry);
    if (this.recorded.size > 5000) this.recorded.delete(this.recorded.keys().next().value!);
    const body: CoreV1Event = {
      metadata: { name: entry.name, namespace },
      involvedObject: {
        apiVersion: "v1",
        kind: target.kind,
        ...(target.namespace ? { namespace: target.namespace } : {}),
        name: target.name,
        ...(target.uid ? { uid: target.uid } : {}),
        ...(target.fieldPath ? { fieldPath: target.fieldPath } : {}),
      },
      reason,
      message,
      type,
      source: this.component,
      reportingComponent: this.component.component,
      reportingInstance: this.component.host,
      count: 1,
      firstTimestamp: now as unknown as Date,
      lastTimestamp: now as unknown as Date,
    };
    this.core.createNamespacedEvent({ namespace, body }).catch((err) => {
      this.logger.debug({ reason, error: describeError(err) }, "could not record event");
    });
  }

  private flush(entry: Recorded): void {
    entry.timer = undefined;
    entry.flushed = Date.now();
    if (this.stopped) return;
    this.core
      .patchNamespacedEvent(
        {
          name: entry.name,
          namespace: entry.namespace,
          body: { count: entry.count, lastTimestamp: entry.lastTimestamp },
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      )
      .catch((err) => this.logger.debug({ error: describeError(err) }, "could not update event"));
  }

  /** Forgets the events of a pod that is gone. */
  forget(uid: string): void {
    for (const [key, entry] of this.recorded) {
      if (key.includes(`"${uid}"`)) {
        if (entry.timer) clearTimeout(entry.timer);
        this.recorded.delete(key);
      }
    }
  }

  stop(): void {
    this.stopped = true;
    for (const entry of this.recorded.values()) if (entry.timer) clearTimeout(entry.timer);
  }
}
