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

/** Ends the identity a replica of this version holds the legacy Lease with; none of the previous version's does. */
export const FENCE_IDENTITY_SUFFIX = " (per-capability Leases)";

/**
 * Keeps replicas of the previous version from leading beside this one's: one replica of this
 * version holds their Lease, `tenantry-controllers`, for as long as it runs (an elector like any
 * other, renewed every 2 s; another takes over when it stops), so none of theirs can take it. The
 * promise resolves once a replica of this version holds it — immediately on a new installation,
 * once the previous version's leader is gone during an upgrade — and the capabilities' electors
 * start then. Checked every 2 s.
 */
export function fenceOutPreviousVersion(
  context: Pick<kube.SharedContext, "client" | "namespace" | "lifecycle" | "logger">,
  identity: string,
): Promise<void> {
  const { client, namespace, lifecycle, logger } = context;
  const fence = new kube.LeaderElector({
    lease: { client, namespace, name: LEGACY_CONTROLLERS_LEASE },
    identity: `${identity}${FENCE_IDENTITY_SUFFIX}`,
    logger,
    onStartedLeading: () => undefined,
    onStoppedLeading: async () => undefined,
  });
  const abort = new AbortController();
  fence.start();
  lifecycle.started("previous version's Lease", {
    stop: async () => {
      abort.abort();
      await fence.stop();
    },
  });
  const heldByThisVersion = async () => {
    if (fence.isLeader()) return true;
    const lease = await client.coordination
      .readNamespacedLease({ name: LEGACY_CONTROLLERS_LEASE, namespace })
      .catch(() => undefined);
    return lease?.spec?.holderIdentity?.endsWith(FENCE_IDENTITY_SUFFIX) || undefined;
  };
  return pollUntil(heldByThisVersion, {
    timeoutMs: Number.POSITIVE_INFINITY,
    intervalMs: 2000,
    signal: abort.signal,
  }).then(
    () => undefined,
    () => undefined,
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
