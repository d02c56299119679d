/**
 * The part of a Runtime's status the controller owns — everything but `lastActivity`, which the
 * runtimes proxy writes — built up during a reconcile and written with server-side apply of those
 * fields alone, only when it changed.
 */
import { randomBytes } from "node:crypto";
import {
  applyStatus,
  type ClusterClient,
  type Condition,
  type ConditionUpdate,
  formatKubeTime,
  isNotFound,
  sameStoredJson,
  setCondition,
} from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import { type Runtime, type RuntimeStatus, START_STEPS, type StartStep } from "../api/runtime.js";
import type { StepReport } from "./progress.js";

export type OwnedStatus = Omit<RuntimeStatus, "lastActivity">;
type Step = NonNullable<RuntimeStatus["steps"]>[number];

const MAX_MESSAGE = 32_000;
const MAX_STEP_MESSAGE = 4_000;

/** A route token: 32 random bytes, url-safe (43 characters). */
export function newRouteToken(): string {
  return randomBytes(32).toString("base64url");
}

export function ownedStatus(status: RuntimeStatus | undefined): OwnedStatus {
  const { lastActivity: _lastActivity, ...owned } = status ?? {};
  return owned;
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export class StatusDraft {
  readonly status: OwnedStatus;
  /** Set when the object is gone (its finalizer removed): nothing to write. */
  gone = false;
  /** What the API server holds of the owned fields, as far as this reconcile knows. */
  private written: OwnedStatus;

  constructor(
    private readonly runtime: Runtime,
    /** Told of every status written, so the next reconcile does not act on a cache that is behind. */
    private readonly onWritten: (status: OwnedStatus) => void = () => {},
    private readonly now: Date = new Date(),
  ) {
    this.status = structuredClone(ownedStatus(runtime.status));
    this.written = ownedStatus(runtime.status);
  }

  get generation(): number {
    return this.runtime.metadata?.generation ?? 0;
  }

  set(phase: NonNullable<OwnedStatus["phase"]>, reason: string, message: string): void {
    this.status.phase = phase;
    this.status.reason = reason;
    this.status.message = clip(message, MAX_MESSAGE);
  }

  condition(type: "Ready" | "Deployed", update: Omit<ConditionUpdate, "type" | "observedGeneration">): void {
    this.status.conditions = setCondition(
      this.status.conditions as Condition[] | undefined,
      {
        type,
        ...update,
        message: clip(update.message, MAX_STEP_MESSAGE),
        observedGeneration: this.generation,
      },
      this.now,
    );
  }

  step(name: StartStep, report: StepReport): void {
    const steps = this.steps();
    const index = steps.findIndex((s) => s.name === name);
    const before = steps[index]!;
    const message = clip(report.message, MAX_STEP_MESSAGE);
    if (before.state === report.state && (before.message ?? "") === message) return;
    steps[index] = {
      name,
      state: report.state,
      ...(report.state !== "Pending" || message ? { time: formatKubeTime(this.now) } : {}),
      ...(message ? { message } : {}),
    };
    this.status.steps = steps;
  }

  /** Every step back to Pending (a new start, or stopped). */
  resetSteps(): void {
    this.status.steps = START_STEPS.map((name) => ({ name, state: "Pending" }));
  }

  /** The first step not done, marked Failed with `message` (unless a step already failed). */
  failStep(message: string): void {
    if (this.steps().some((s) => s.state === "Failed")) return;
    const pending = this.steps().find((s) => s.state !== "Done");
    if (pending) this.step(pending.name, { state: "Failed", message });
  }

  private steps(): Step[] {
    const known = this.status.steps ?? [];
    return START_STEPS.map((name) => known.find((s) => s.name === name) ?? { name, state: "Pending" });
  }

  /** A new start: a new route token, its start time, nothing of the previous start kept. */
  beginStart(): string {
    const token = newRouteToken();
    this.status.route = { token };
    this.status.startTime = formatKubeTime(this.now);
    delete this.status.startedAt;
    delete this.status.endpoint;
    this.resetSteps();
    this.set("Starting", "Starting", "starting");
    this.condition("Ready", { status: "False", reason: "Starting", message: "the runtime is starting" });
    this.condition("Deployed", {
      status: "False",
      reason: "Deploying",
      message: "the runtime is being deployed",
    });
    this.status.observedGeneration = this.generation;
    return token;
  }

  /** The session is over: no route, no endpoint. */
  endSession(): void {
    delete this.status.route;
    delete this.status.endpoint;
    delete this.status.startedAt;
  }

  changed(): boolean {
    return !sameStoredJson(this.status, this.written);
  }

  /**
   * Server-side applies the owned fields when they changed; a runtime gone meanwhile is no error.
   * Resolves with the stored resourceVersion when it wrote.
   */
  async write(client: ClusterClient): Promise<string | undefined> {
    if (this.gone || !this.changed()) return undefined;
    try {
      const stored = await applyStatus(client, {
        apiVersion: TENANTS_API_VERSION,
        kind: "Runtime",
        metadata: { name: this.runtime.metadata!.name!, namespace: this.runtime.metadata!.namespace! },
        status: this.status,
      });
      this.written = structuredClone(this.status);
      this.onWritten(this.written);
      return (stored as Runtime).metadata?.resourceVersion;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return undefined;
    }
  }
}

/**
 * The runtime as the controller last wrote it when the cache has not caught up with that write
 * yet (the controller is the only writer of these fields, so a difference means the cache is
 * behind); `undefined` once the cache holds it.
 */
export function withLastWritten(runtime: Runtime, written: OwnedStatus | undefined): Runtime | undefined {
  if (!written || sameStoredJson(ownedStatus(runtime.status), written)) return undefined;
  const lastActivity = runtime.status?.lastActivity;
  return { ...runtime, status: { ...structuredClone(written), ...(lastActivity ? { lastActivity } : {}) } };
}
