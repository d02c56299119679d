/**
 * The endpoint-probe condition: the URL template filled from the pod, and a prober that GETs
 * endpoints with bounded concurrency off the monitor's work queue (a slow endpoint never holds
 * up the evaluation of other objects), keeping the last result per pod and rule.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { V1Pod } from "@kubernetes/client-node";
import pLimit, { type LimitFunction } from "p-limit";
import type { Logger } from "pino";
import { describeError, silentLogger } from "../kube/index.js";
import type { Probe } from "./api/monitor-rule.js";

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_./-]+)\s*\}\}/g;

/**
 * Fills `{{a.b.c}}` placeholders with the pod's fields (`status.podIP`, `metadata.name`,
 * `metadata.labels.app`, `metadata.annotations.port`). A label or annotation key with dots is
 * taken whole after `labels.`/`annotations.`. A field the pod lacks is an error naming it.
 */
export function renderEndpointUrl(template: string, pod: V1Pod): string {
  return template.replace(PLACEHOLDER, (_, path: string) => {
    const value = fieldValue(pod, path);
    if (value === undefined || value === null || typeof value === "object") {
      throw new Error(`endpointUrl: the pod has no value at ${path}`);
    }
    return String(value);
  });
}

function fieldValue(pod: V1Pod, path: string): unknown {
  const mapped = /^metadata\.(labels|annotations)\.(.+)$/.exec(path);
  if (mapped) return pod.metadata?.[mapped[1] as "labels" | "annotations"]?.[mapped[2]!];
  let node: unknown = pod;
  for (const segment of path.split(".")) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

export interface ProbeResult {
  ok: boolean;
  /** When the last attempt ended. */
  at: Date;
  /** What the endpoint answered, or why it did not. */
  message: string;
  url: string;
}

export interface ProberOptions {
  /** Probes in flight at once (default 16). */
  concurrency?: number;
  /** Called after each probe ends (to evaluate the pod again). */
  onResult(key: string, result: ProbeResult): void;
  /** Seconds each attempt took, and whether it passed. */
  observe?(seconds: number, ok: boolean): void;
  /** Pause between retries of one probe (default 500 ms). */
  retryDelayMs?: number;
  logger?: Logger;
}

/** Runs probes with bounded concurrency; one probe per key at a time. */
export class Prober {
  /** Probes running at once (a probe holds its place through its retries). */
  private readonly probing: LimitFunction;
  private readonly inFlight = new Set<string>();
  private readonly results = new Map<string, ProbeResult>();
  private readonly stopped = new AbortController();
  private readonly logger: Logger;

  constructor(private readonly options: ProberOptions) {
    this.probing = pLimit(Math.max(1, options.concurrency ?? 16));
    this.logger = options.logger ?? silentLogger;
  }

  result(key: string): ProbeResult | undefined {
    return this.results.get(key);
  }

  isProbing(key: string): boolean {
    return this.inFlight.has(key);
  }

  forget(key: string): void {
    this.results.delete(key);
  }

  /** Starts a probe of `url` for `key` unless one is already running; never waits for it. */
  request(key: string, url: string, probe: Probe): void {
    if (this.inFlight.has(key) || this.stopped.signal.aborted) return;
    this.inFlight.add(key);
    void this.run(key, url, probe).finally(() => this.inFlight.delete(key));
  }

  stop(): void {
    // Probes in flight end at once (their fetch and pause follow this signal); those still
    // waiting for a place then see it and return without probing.
    this.stopped.abort();
  }

  private run(key: string, url: string, probe: Probe): Promise<void> {
    return this.probing(() => this.probeWithRetries(key, url, probe));
  }

  private async probeWithRetries(key: string, url: string, probe: Probe): Promise<void> {
    try {
      let result: ProbeResult | undefined;
      for (let attempt = 0; attempt <= probe.retries; attempt++) {
        if (this.stopped.signal.aborted) return;
        if (attempt > 0)
          await sleep(this.options.retryDelayMs ?? 500, undefined, { signal: this.stopped.signal }).catch(
            () => {},
          );
        result = await this.attempt(url, probe);
        if (result.ok) break;
      }
      if (!result || this.stopped.signal.aborted) return;
      this.results.set(key, result);
      this.options.onResult(key, result);
    } catch (err) {
      this.logger.warn({ key, err: describeError(err) }, "probe failed to run");
    }
  }

  private async attempt(url: string, probe: Probe): Promise<ProbeResult> {
    const started = performance.now();
    let ok = false;
    let message: string;
    try {
      const response = await fetch(url, {
        signal: AbortSignal.any([AbortSignal.timeout(probe.timeoutSeconds * 1000), this.stopped.signal]),
        redirect: "manual",
      });
      await response.body?.cancel();
      ok = response.status === probe.statusCode;
      message = `GET ${url} answered ${response.status}${ok ? "" : `, not ${probe.statusCode}`}`;
    } catch (err) {
      const reason =
        err instanceof Error && err.name === "TimeoutError"
          ? `no answer within ${probe.timeoutSeconds} s`
          : describeError((err as { cause?: unknown }).cause ?? err);
      message = `GET ${url} failed: ${reason}`;
    }
    const seconds = (performance.now() - started) / 1000;
    this.options.observe?.(seconds, ok);
    return { ok, at: new Date(), message, url };
  }
}
