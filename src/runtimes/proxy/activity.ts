/**
 * Per-route last activity for idle culling. Requests and WebSocket traffic stamp a number in memory
 * (no I/O on the request path); at each interval the stamps newer than what the Runtime shows are
 * written to `status.lastActivity` — at most one merge patch of the status subresource per runtime,
 * conditional on the resourceVersion it was compared with, so that two proxy replicas never move it
 * back. The controller owns every other status field (contract rule 1).
 */
import type { Duplex } from "node:stream";
import { PatchStrategy } from "@kubernetes/client-node";
import pLimit from "p-limit";
import type { Logger } from "pino";
import {
  type ClusterClient,
  describeError,
  formatKubeTime,
  isConflict,
  isNotFound,
} from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import type { Runtime } from "../api/runtime.js";
import type { RouteSource } from "./source.js";

/** Field manager of the proxy's status writes (lastActivity only). */
export const PROXY_FIELD_MANAGER = "tenantry-runtimes-proxy";

/** What the proxy keeps of one route while it serves it. */
export class LiveRoute {
  /** Last request or WebSocket traffic, in ms since the epoch (0: none yet). */
  lastActivity = 0;
  /** The stamp last written, or found already written (ms). */
  written = 0;
  /** Aborts of the requests in flight to the runtime. */
  readonly requests = new Set<(reason: Error) => void>();
  /** Open WebSocket connections (both sockets of each). */
  readonly sockets = new Set<Duplex>();

  constructor(
    readonly key: string,
    readonly namespace: string,
    readonly name: string,
    readonly token: string,
  ) {}

  touch(): void {
    this.lastActivity = Date.now();
  }

  /** Closes every connection to the runtime (it stopped, or its route went away). */
  closeAll(reason: Error): void {
    for (const abort of [...this.requests]) abort(reason);
    this.requests.clear();
    for (const socket of [...this.sockets]) socket.destroy();
    this.sockets.clear();
  }
}

export type ActivityWriteResult = "written" | "newer" | "gone" | "conflict";

export interface ActivityWriter {
  /**
   * Writes `time` to the runtime's `status.lastActivity` unless it shows a later one. The write is
   * conditional on `resourceVersion` (the version the caller compared with).
   */
  write(runtime: Runtime, time: string): Promise<ActivityWriteResult>;
}

/** Writes through the Kubernetes API: merge patch of the status subresource. */
export class KubeActivityWriter implements ActivityWriter {
  constructor(private readonly client: ClusterClient) {}

  async write(runtime: Runtime, time: string): Promise<ActivityWriteResult> {
    const namespace = runtime.metadata!.namespace!;
    const name = runtime.metadata!.name!;
    let resourceVersion = runtime.metadata?.resourceVersion;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await this.client.objects.patchSubresource(
          {
            apiVersion: TENANTS_API_VERSION,
            kind: "Runtime",
            metadata: { name, namespace, ...(resourceVersion ? { resourceVersion } : {}) },
            status: { lastActivity: time },
          },
          "status",
          PatchStrategy.MergePatch,
          { fieldManager: PROXY_FIELD_MANAGER },
        );
        return "written";
      } catch (err) {
        if (isNotFound(err)) return "gone";
        if (!isConflict(err)) throw err;
      }
      // Someone wrote first (the controller, another replica): look again before writing.
      let fresh: Runtime;
      try {
        fresh = (await this.client.objects.read({
          apiVersion: TENANTS_API_VERSION,
          kind: "Runtime",
          metadata: { name, namespace },
        })) as Runtime;
      } catch (err) {
        if (isNotFound(err)) return "gone";
        throw err;
      }
      if (stampOf(fresh) >= Date.parse(time)) return "newer";
      resourceVersion = fresh.metadata?.resourceVersion;
    }
    return "conflict";
  }
}

function stampOf(runtime: Runtime): number {
  const text = runtime.status?.lastActivity;
  const ms = text ? Date.parse(text) : Number.NaN;
  return Number.isFinite(ms) ? ms : 0;
}

export interface ActivityRecorderOptions {
  source: RouteSource;
  writer: ActivityWriter;
  /** How often stamps are written (default 30 s). */
  intervalMs?: number;
  /** Writes in flight at once during a flush (default 8). */
  concurrency?: number;
  logger: Logger;
  onWrite?: (result: ActivityWriteResult | "failed") => void;
}

/** Writes the live routes' activity to their Runtimes at an interval. */
export class ActivityRecorder {
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;

  constructor(
    private readonly routes: Map<string, LiveRoute>,
    private readonly options: ActivityRecorderOptions,
  ) {}

  start(): void {
    const interval = this.options.intervalMs ?? 30_000;
    this.timer = setInterval(() => void this.flush(), interval);
    this.timer.unref();
  }

  /** Stops the timer and writes what is pending. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** One round of writes (a round already running is joined, then one more runs). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    this.flushing = this.round().finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  private async round(): Promise<void> {
    const due: { route: LiveRoute; runtime: Runtime; stamp: number }[] = [];
    for (const route of this.routes.values()) {
      const runtime = this.options.source.byToken(route.token);
      const serving = runtime !== undefined && route.requests.size + route.sockets.size > 0;
      if (route.lastActivity <= route.written) {
        // Nothing to write: forget routes that are gone or idle (the next request brings them back).
        if (!serving) this.routes.delete(route.key);
        continue;
      }
      // A token that is gone (the runtime was deleted, or resumed under a new token) takes its stamp with it.
      if (
        !runtime ||
        runtime.metadata?.namespace !== route.namespace ||
        runtime.metadata?.name !== route.name
      ) {
        this.routes.delete(route.key);
        continue;
      }
      const stamp = Math.floor(route.lastActivity / 1000) * 1000;
      if (stamp <= stampOf(runtime)) {
        route.written = route.lastActivity;
        continue;
      }
      due.push({ route, runtime, stamp });
    }
    await pLimit(this.options.concurrency ?? 8).map(due, async ({ route, runtime, stamp }) => {
      const seen = route.lastActivity;
      try {
        const result = await this.options.writer.write(runtime, formatKubeTime(stamp));
        this.options.onWrite?.(result);
        if (result === "written" || result === "newer") route.written = Math.max(route.written, seen);
        else if (result === "gone") this.routes.delete(route.key);
      } catch (err) {
        this.options.onWrite?.("failed");
        this.options.logger.warn(
          { err: describeError(err), runtime: route.key },
          "could not write a runtime's last activity; trying again at the next interval",
        );
      }
    });
  }
}
