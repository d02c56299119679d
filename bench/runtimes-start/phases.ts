/**
 * When each step of a start was done, to the millisecond, as watches in the benchmark's process see
 * it (the objects' own timestamps are whole seconds): the namespace, the Runtime, its objects
 * applied (Deployed), the pod created, bound to a node, its container's process started, the
 * server answering (the benchmark dials the pod itself every 20 ms once its process runs), the
 * node's readiness probe passed (pod Ready), the runtime Ready, and the client's GET answered 200.
 */
import { request } from "node:http";
import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import { type ClusterClient, Informer, startInformers, stopInformers } from "../../src/kube/index.js";
import type { Runtime } from "../../src/runtimes/index.js";
import { percentile } from "../support/report.js";

export const STEPS = [
  "namespace created",
  "Runtime created",
  "objects applied (Deployed)",
  "pod created",
  "pod scheduled",
  "process started",
  "server answering",
  "pod Ready (node's probe)",
  "runtime Ready",
  "GET 200 (client)",
] as const;
export type Step = (typeof STEPS)[number];

const RUNTIME_LABEL = "tenantry.dev/runtime";
const ANSWER_POLL_MS = 20;

/** Dials `http://ip:port/` once; true when something answers with a status. */
function answers(ip: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: ip, port, path: "/", timeout: 500, agent: false }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(false));
    req.end();
  });
}

export class PhaseClock {
  /** Per start `<user>/<instance>`: when each step was first seen (Date.now()). */
  private readonly seen = new Map<string, Map<Step, number>>();
  private readonly namespaces: Informer<V1Namespace>;
  private readonly runtimes: Informer<Runtime>;
  private readonly pods: Informer<V1Pod>;
  private readonly dialing = new Set<string>();
  private readonly namespaceSeen = new Map<string, number>();
  /** `<namespace>/<name>` of each Runtime → its `<user>/<instance>` (pods name their Runtime). */
  private readonly startOf = new Map<string, string>();
  private stopped = false;

  constructor(client: ClusterClient) {
    this.namespaces = Informer.forResource<V1Namespace>(client, { apiVersion: "v1", kind: "Namespace" });
    this.runtimes = Informer.forResource<Runtime>(client, {
      apiVersion: "tenantry.dev/v1alpha1",
      kind: "Runtime",
    });
    this.pods = Informer.forResource<V1Pod>(client, {
      apiVersion: "v1",
      kind: "Pod",
      labelSelector: RUNTIME_LABEL,
    });
  }

  async start(): Promise<void> {
    this.namespaces.addHandler({ onAdd: (n) => this.onNamespace(n) });
    this.runtimes.addHandler({ onAdd: (r) => this.onRuntime(r), onUpdate: (_, r) => this.onRuntime(r) });
    this.pods.addHandler({ onAdd: (p) => this.onPod(p), onUpdate: (_, p) => this.onPod(p) });
    await startInformers([this.namespaces, this.runtimes, this.pods] as never, 60_000);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await stopInformers([this.namespaces, this.runtimes, this.pods] as never);
  }

  /** The client's GET answered 200 for the start `<user>/<instance>`. */
  answered(key: string, at: number): void {
    this.mark(key, "GET 200 (client)", at);
  }

  /** Forgets what was seen (between batches). */
  reset(): void {
    this.seen.clear();
  }

  /** p50/p99/max per step over `starts`, each in seconds after its own POST was sent. */
  rows(starts: readonly { key: string; began: number }[]): (string | number)[][] {
    return STEPS.map((step) => {
      // A namespace made before this batch (an earlier batch's user) is not this start's step.
      const times = starts
        .map(({ key, began }) => (this.seen.get(key)?.get(step) ?? Number.NaN) - began)
        .filter((t) => Number.isFinite(t) && (step !== "namespace created" || t >= 0));
      const secs = (v: number) => (Number.isFinite(v) ? (v / 1000).toFixed(2) : "-");
      return [
        step,
        String(times.length),
        secs(percentile(times, 50)),
        secs(percentile(times, 99)),
        secs(times.length ? Math.max(...times) : Number.NaN),
      ];
    });
  }

  /** For each start, GET 200 minus server answering: how late the answering was noticed. */
  noticeLagsMs(keys: readonly string[]): number[] {
    return keys.flatMap((k) => {
      const steps = this.seen.get(k);
      const a = steps?.get("server answering");
      const b = steps?.get("runtime Ready");
      return a !== undefined && b !== undefined ? [b - a] : [];
    });
  }

  private mark(key: string, step: Step, at = Date.now()): void {
    const steps = this.seen.get(key) ?? new Map<Step, number>();
    this.seen.set(key, steps);
    if (!steps.has(step)) steps.set(step, at);
  }

  /** A namespace's first sighting counts for every runtime in it (a start's comes before its Runtime). */
  private onNamespace(namespace: V1Namespace): void {
    const name = namespace.metadata?.name;
    if (name && !this.namespaceSeen.has(name)) this.namespaceSeen.set(name, Date.now());
  }

  private onRuntime(runtime: Runtime): void {
    if (runtime.metadata?.deletionTimestamp) return;
    const key = `${runtime.spec?.user}/${runtime.spec?.instance}`;
    this.startOf.set(`${runtime.metadata?.namespace}/${runtime.metadata?.name}`, key);
    if (runtime.spec?.desiredState !== "Running") return;
    this.mark(key, "Runtime created");
    const namespaceAt = this.namespaceSeen.get(runtime.metadata?.namespace ?? "");
    if (namespaceAt !== undefined) this.mark(key, "namespace created", namespaceAt);
    const conditions = runtime.status?.conditions ?? [];
    const isTrue = (type: string) => conditions.some((c) => c.type === type && c.status === "True");
    if (isTrue("Deployed")) this.mark(key, "objects applied (Deployed)");
    if (isTrue("Ready") && runtime.status?.phase === "Running") this.mark(key, "runtime Ready");
  }

  private onPod(pod: V1Pod): void {
    if (pod.metadata?.deletionTimestamp) return;
    const runtime = pod.metadata?.labels?.[RUNTIME_LABEL];
    if (!runtime) return;
    const key = this.startOf.get(`${pod.metadata?.namespace}/${runtime}`);
    if (!key) return;
    this.mark(key, "pod created");
    if (pod.spec?.nodeName) this.mark(key, "pod scheduled");
    const running = (pod.status?.containerStatuses ?? []).some((s) => s.state?.running);
    if (running) {
      this.mark(key, "process started");
      this.dial(key, pod);
    }
    if (pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"))
      this.mark(key, "pod Ready (node's probe)");
  }

  /** Dials the pod until it answers: when the server itself was first up. */
  private dial(key: string, pod: V1Pod): void {
    const ip = pod.status?.podIP;
    const port = pod.spec?.containers[0]?.ports?.[0]?.containerPort;
    if (!ip || !port || this.dialing.has(key) || this.seen.get(key)?.has("server answering")) return;
    this.dialing.add(key);
    void (async () => {
      while (!this.stopped && !(await answers(ip, port)))
        await new Promise((resolve) => setTimeout(resolve, ANSWER_POLL_MS));
      this.dialing.delete(key);
      if (!this.stopped) this.mark(key, "server answering");
    })();
  }
}
