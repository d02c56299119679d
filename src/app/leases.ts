import { pollUntil } from "../common/index.js";
import * as kube from "../kube/index.js";

/** The Lease whose holder runs one capability's leader-only controllers. */
export function controllersLease(capability: string): string {
  return `tenantry-${capability}`;
}

/**
 * The one Lease every replica competed for before each capability had its own: its holder ran every
 * controller. Replicas of that version may still run during a rolling upgrade.
 */
export const LEGACY_CONTROLLERS_LEASE = "tenantry-controllers";

/**
 * Resolves once no replica of the previous version leads: the legacy Lease is missing, released,
 * or has gone unrenewed for its duration as this process observed it (the rule a candidate uses to
 * take a Lease, so a skewed clock cannot end it early). Checked every 2 s, the renewal period.
 */
export async function legacyLeaderGone(
  client: kube.ClusterClient,
  namespace: string,
  identity: string,
  signal: AbortSignal,
): Promise<void> {
  let seen: { version: string; at: number } | undefined;
  await pollUntil(
    async () => {
      // null: there is none; undefined: not read this time (asked again).
      const lease = await client.coordination
        .readNamespacedLease({ name: LEGACY_CONTROLLERS_LEASE, namespace })
        .catch((err: unknown) => (kube.isNotFound(err) ? null : undefined));
      if (lease === null) return true;
      if (lease === undefined) return undefined;
      const version = lease.metadata?.resourceVersion ?? "";
      if (seen?.version !== version) seen = { version, at: Date.now() };
      return kube.shouldAcquire(kube.leaseRecordFrom(lease.spec), Date.now(), identity, seen.at) || undefined;
    },
    { timeoutMs: Number.POSITIVE_INFINITY, intervalMs: 2000, signal },
  );
}

/**
 * An elector that starts competing only once `ready` resolves (the previous version's leader is
 * gone), so that a capability's controllers never run beside that leader's.
 */
export class ElectorAfter implements kube.Elector {
  private waiting?: Promise<void>;
  private stopping?: () => void;
  private readonly stopped = new Promise<"stopped">((resolve) => {
    this.stopping = () => resolve("stopped");
  });

  constructor(
    private readonly ready: Promise<void>,
    private readonly inner: kube.Elector,
  ) {}

  start(): void {
    this.waiting ??= Promise.race([this.ready.then(() => "ready" as const), this.stopped]).then((outcome) => {
      if (outcome === "ready") this.inner.start();
    });
  }

  async stop(): Promise<void> {
    this.stopping?.();
    await this.waiting;
    await this.inner.stop();
  }

  isLeader(): boolean {
    return this.inner.isLeader();
  }
}
