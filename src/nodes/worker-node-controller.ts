/**
 * The WorkerNode controller (CloudVeneto CaaS, steps 3–5): asks the provider for the machine with the
 * join configuration in its user data, follows the machine and the join (CSR, Node, Ready) through
 * the phases Building → Available → Joining → Running, keeps a private node labelled and tainted
 * for its owner, deletes the bootstrap token once Running, and on deletion cordons, drains,
 * deletes the Node, the machine and the token. A failure (the provider refused, the machine broke
 * or vanished, the join deadline passed) is Failed with the reason, and nothing is left behind.
 */
import {
  PatchStrategy,
  setHeaderOptions,
  type V1CertificateSigningRequest,
  type V1Node,
  type V1Secret,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  addFinalizer,
  applyStatusUnlessGone,
  type ClusterClient,
  type Condition,
  type ConditionUpdate,
  Controller,
  describeError,
  findCondition,
  isNotFound,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  removeFinalizer,
  requeueAfter,
  sameStoredJson,
  setCondition,
} from "../kube/index.js";
import { TENANTS_API_VERSION, type TenantInformers } from "../tenants/index.js";
import { joinTimeoutSeconds } from "./admission.js";
import type { NodeProvider } from "./api/node-provider.js";
import {
  DEFAULT_DRAIN_TIMEOUT_SECONDS,
  type WorkerNode,
  type WorkerNodePhase,
  type WorkerNodeStatus,
} from "./api/worker-node.js";
import { cordon, evictPods } from "./drain.js";
import type { NodeInformers } from "./informers.js";
import { type BootstrapToken, renderUserData, tokenOfSecret } from "./join.js";
import {
  BOOTSTRAP_USER_PREFIX,
  LEGACY_NODE_LABELS,
  NODE_OWNER_TAINT,
  WORKER_NODE_FINALIZER,
  WORKER_NODE_LABEL,
  WORKER_NODE_UID_LABEL,
} from "./labels.js";
import type { ProviderRegistry } from "./providers/registry.js";
import { firstIpv4, type Machine, type MachineProvider, ProviderError } from "./providers/spi.js";
import { type NodeRegistration, nodeRegistration } from "./registration.js";

export interface WorkerNodeControllerOptions {
  client: ClusterClient;
  informers: NodeInformers;
  tenants: TenantInformers;
  registry: ProviderRegistry;
  /** This cluster's id: machines are tagged with it. */
  clusterId: string;
  logger: Logger;
  /** How machines reach kube-apiserver, and its CA; default: what tenantry's own kubeconfig says. */
  apiServer?: { url: string; caPem: string };
  /** How often a node on its way to Running is looked at (the provider polled). Default 2 s. */
  pollMs?: number;
  /** How often a Running node's machine is checked. Default 30 s. */
  runningCheckMs?: number;
  /** How long a bootstrap token Secret may wait for its WorkerNode before it is taken for an orphan. Default 60 s. */
  orphanGraceMs?: number;
  workers?: number;
}

const MACHINE_READY = "MachineReady";
const JOINED = "Joined";
const READY = "Ready";
const DRAINED = "Drained";

type Phase = WorkerNodePhase;

/** The status being worked out for one reconcile; written once at the end if it changed. */
interface Draft {
  node: WorkerNode;
  status: WorkerNodeStatus;
  now: Date;
}

/** What one look at the machine and the join found, for the phase's handler to go on from. */
interface Followed {
  machine: Machine;
  active: boolean;
  registered: V1Node | undefined;
  /** The certificate requests of the node's bootstrap token. */
  csrs: V1CertificateSigningRequest[];
  deadline: number;
}

/** A step that ends the reconcile (the node failed, or there is something to wait for) gives its result. */
interface Stop {
  result: ReconcileResult;
}

/** The way to Running, in order: a node seen further along has been through the ones before. */
const PROGRESS: readonly Phase[] = ["Building", "Available", "Joining", "Running"];

function setPhase(draft: Draft, phase: Phase, reason: string, message: string): void {
  const { status } = draft;
  status.phase = phase;
  status.reason = reason;
  status.message = message;
  const phases = [...(status.phases ?? [])];
  const passed = PROGRESS.includes(phase) ? PROGRESS.slice(0, PROGRESS.indexOf(phase) + 1) : [phase];
  for (const step of passed) {
    // A machine that joined between two looks went through Available (and Joining) unseen.
    if (!phases.some((p) => p.phase === step)) phases.push({ phase: step, time: draft.now.toISOString() });
  }
  status.phases = phases;
}

function condition(draft: Draft, update: Omit<ConditionUpdate, "observedGeneration">): void {
  draft.status.conditions = setCondition(
    draft.status.conditions as Condition[] | undefined,
    { ...update, observedGeneration: draft.node.metadata?.generation ?? 0 },
    draft.now,
  );
}

/**
 * Whether a node missed its join deadline at `now`. The deadline is for joining: a node that was
 * Running once joined, and is never failed for it — not when its provider is briefly unavailable
 * long after, nor when its Node comes and goes.
 */
export function joinTimedOut(status: WorkerNodeStatus, deadline: number, now: number): boolean {
  const joined = status.phase === "Running" || (status.phases ?? []).some((p) => p.phase === "Running");
  return !joined && now >= deadline;
}

function isNodeReady(node: V1Node | undefined): boolean {
  return node?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

export class WorkerNodeController {
  private readonly controller: Controller;
  private readonly pollMs: number;
  private readonly runningCheckMs: number;
  private readonly orphanGraceMs: number;
  private readonly unwatch = new Map<string, () => void>();

  constructor(private readonly options: WorkerNodeControllerOptions) {
    this.pollMs = options.pollMs ?? 2_000;
    this.runningCheckMs = options.runningCheckMs ?? 30_000;
    this.orphanGraceMs = options.orphanGraceMs ?? 60_000;
    const { informers } = options;
    this.controller = new Controller({
      name: "worker-nodes",
      workers: options.workers ?? 8,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    const byWorkerNodeLabel = (o: V1Node | V1Secret) => {
      const name = o.metadata?.labels?.[WORKER_NODE_LABEL];
      return name ? [this.key(name)] : [];
    };
    this.controller.watch(informers.workerNodes);
    this.controller.watch(informers.nodes, (node) => {
      const name = node.metadata?.labels?.[WORKER_NODE_LABEL];
      return name && name === node.metadata?.name ? [this.key(name)] : [];
    });
    this.controller.watch(informers.tokens, byWorkerNodeLabel);
    this.controller.watch(informers.csrs, (csr) => {
      const username = csr.spec?.username ?? "";
      if (!username.startsWith(BOOTSTRAP_USER_PREFIX)) return [];
      const secret = informers.tokens.get(
        "kube-system",
        `bootstrap-token-${username.slice(BOOTSTRAP_USER_PREFIX.length)}`,
      );
      return secret ? byWorkerNodeLabel(secret) : [];
    });
    // A provider that becomes Ready again (or changes) lets waiting nodes go on.
    this.controller.watch(informers.providers, (provider) =>
      informers.workerNodes
        .list()
        .filter((n) => n.spec.provider === provider.metadata?.name)
        .map((n) => this.key(n.metadata!.name!)),
    );
  }

  private key(name: string): string {
    return objectKey(this.options.client.name, undefined, name);
  }

  start(): Promise<void> {
    return this.controller.start();
  }

  async stop(options?: { timeoutMs?: number }): Promise<void> {
    for (const unwatch of this.unwatch.values()) unwatch();
    this.unwatch.clear();
    await this.controller.stop(options);
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const name = ctx.ref.name;
    const node = this.options.informers.workerNodes.get(undefined, name);
    if (!node) {
      await this.removeOrphanTokens(name);
      return reconcileDone();
    }
    const draft: Draft = {
      node,
      status: structuredClone(node.status ?? {}),
      now: new Date(),
    };
    draft.status.observedGeneration = node.metadata?.generation ?? 0;
    let result: ReconcileResult;
    let failure: unknown;
    try {
      result = node.metadata?.deletionTimestamp
        ? await this.finalize(draft, ctx)
        : await this.advance(draft, ctx);
    } catch (err) {
      failure = err;
      result = reconcileDone();
    }
    // Written even when the reconcile failed: the reason is what the user needs to see.
    if (failure) {
      const message = describeError(failure);
      if (!draft.status.message?.includes(message)) draft.status.message = message;
    }
    await this.writeStatus(node, draft.status);
    if (failure) throw failure;
    return result;
  }

  private async writeStatus(node: WorkerNode, status: WorkerNodeStatus): Promise<void> {
    if (sameStoredJson(node.status ?? {}, status)) return;
    // Server-side apply: fields tenantry no longer writes (the token id once it is gone) are removed.
    await applyStatusUnlessGone(this.options.client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "WorkerNode",
      metadata: { name: node.metadata!.name! },
      status,
    });
  }

  private providerObject(node: WorkerNode): NodeProvider | undefined {
    return this.options.informers.providers.get(undefined, node.spec.provider);
  }

  private async providerClient(node: WorkerNode): Promise<MachineProvider> {
    const object = this.providerObject(node);
    if (!object) throw new ProviderError(`NodeProvider "${node.spec.provider}" does not exist`, false);
    const provider = await this.options.registry.providerFor(object);
    const name = node.spec.provider;
    if (provider.watch && !this.unwatch.has(name)) {
      this.unwatch.set(
        name,
        provider.watch((machine) => this.controller.enqueue(this.key(machine))),
      );
    }
    return provider;
  }

  private owner(node: WorkerNode) {
    return { name: node.metadata!.name!, uid: node.metadata!.uid!, clusterId: this.options.clusterId };
  }

  private registeredNode(name: string): V1Node | undefined {
    const node = this.options.informers.nodes.get(undefined, name);
    return node?.metadata?.labels?.[WORKER_NODE_LABEL] === name ? node : undefined;
  }

  private tokenSecret(node: WorkerNode): V1Secret | undefined {
    return this.options.informers
      .tokensOf(node.metadata!.name!)
      .find((s) => s.metadata?.labels?.[WORKER_NODE_UID_LABEL] === node.metadata!.uid);
  }

  // --- on the way to Running --------------------------------------------------------------------

  /**
   * What advance does in each phase (a node without one yet starts in Building). Deleting belongs to
   * finalize; a node found in it here goes on towards Running like one on its way there.
   */
  private readonly phaseHandlers: Record<
    Phase,
    (draft: Draft, ctx: ReconcileContext) => Promise<ReconcileResult>
  > = {
    Building: (draft, ctx) => this.bringUp(draft, ctx),
    Available: (draft, ctx) => this.bringUp(draft, ctx),
    Joining: (draft, ctx) => this.bringUp(draft, ctx),
    Running: (draft, ctx) => this.keepRunning(draft, ctx),
    Failed: (draft) => this.cleanUpFailed(draft),
    Deleting: (draft, ctx) => this.bringUp(draft, ctx),
  };

  private async advance(draft: Draft, ctx: ReconcileContext): Promise<ReconcileResult> {
    await addFinalizer(this.options.client.objects, draft.node, WORKER_NODE_FINALIZER);
    if (!draft.status.phase)
      setPhase(draft, "Building", "MachineRequested", "asking the provider for a machine");
    return this.phaseHandlers[draft.status.phase!](draft, ctx);
  }

  /** Building, Available, Joining: the machine is followed until its Node is Ready, or the join deadline passes. */
  private async bringUp(draft: Draft, ctx: ReconcileContext): Promise<ReconcileResult> {
    const seen = await this.followMachine(draft, ctx);
    if ("result" in seen) return seen.result;
    const { machine, registered, deadline } = seen;
    if (registered && isNodeReady(registered)) return this.nodeReady(draft, seen);
    const name = draft.node.metadata!.name!;
    condition(draft, {
      type: READY,
      status: "False",
      reason: "NotJoined",
      message: "the node has not joined yet",
    });
    if (registered || seen.csrs.length)
      setPhase(
        draft,
        "Joining",
        "Joining",
        registered
          ? `Node ${name} registered, not Ready yet`
          : "the machine asked for its kubelet certificate",
      );
    else if (seen.active)
      setPhase(
        draft,
        "Available",
        "MachineActive",
        `machine ${machine.id} is ${machine.status}; waiting for it to join`,
      );
    else setPhase(draft, "Building", "MachineBuilding", `machine ${machine.id} is ${machine.status}`);
    return (
      this.pastDeadline(draft, deadline) ??
      requeueAfter(Math.min(this.pollMs, Math.max(100, deadline - Date.now())))
    );
  }

  /** Running: the machine and the Node are checked now and then; a Node no longer Ready is reported. */
  private async keepRunning(draft: Draft, ctx: ReconcileContext): Promise<ReconcileResult> {
    const seen = await this.followMachine(draft, ctx);
    if ("result" in seen) return seen.result;
    const { registered } = seen;
    if (registered && isNodeReady(registered)) return this.nodeReady(draft, seen);
    const name = draft.node.metadata!.name!;
    // It was Running: the Node stopped reporting or went away; the machine is still there.
    condition(draft, {
      type: READY,
      status: "False",
      reason: registered ? "NodeNotReady" : "NodeMissing",
      message: registered ? `Node ${name} is not Ready` : `Node ${name} is gone`,
    });
    return requeueAfter(this.pollMs);
  }

  /** The Node is Ready: the node is Running, its bootstrap token goes, its machine is looked at now and then. */
  private async nodeReady(draft: Draft, { machine, active }: Followed): Promise<ReconcileResult> {
    const { node, status } = draft;
    const name = node.metadata!.name!;
    condition(draft, {
      type: READY,
      status: "True",
      reason: "NodeReady",
      message: `Node ${name} is Ready`,
    });
    if (status.phase !== "Running") setPhase(draft, "Running", "NodeReady", `Node ${name} is Ready`);
    await this.removeTokens(node);
    delete status.bootstrapTokenId;
    if (!active) {
      condition(draft, {
        type: READY,
        status: "False",
        reason: "MachineNotRunning",
        message: `machine ${machine.id} is ${machine.status}`,
      });
    }
    return requeueAfter(this.runningCheckMs);
  }

  /**
   * What every phase from Building to Running does first: the node's machine is found (or asked
   * for), and it and the join are written to the status. Or the result to end the reconcile with
   * (the node failed, or there is something to wait for).
   */
  private async followMachine(draft: Draft, ctx: ReconcileContext): Promise<Followed | Stop> {
    const { node, status } = draft;
    const created = Date.parse(node.metadata?.creationTimestamp as unknown as string) || draft.now.getTime();
    if (!status.joinDeadline) {
      status.joinDeadline = new Date(
        created + joinTimeoutSeconds(this.providerObject(node)) * 1000,
      ).toISOString();
    }
    const deadline = Date.parse(status.joinDeadline);

    const provider = await this.providerClient(node).catch((err: unknown) => {
      condition(draft, {
        type: MACHINE_READY,
        status: "Unknown",
        reason: "ProviderUnavailable",
        message: describeError(err),
      });
      return undefined;
    });
    if (!provider)
      return { result: this.pastDeadline(draft, deadline) ?? requeueAfter(Math.max(this.pollMs, 5_000)) };

    const found = await this.machineOf(draft, provider, created, ctx);
    if ("result" in found) return found;
    const { machine } = found;
    const failed = this.recordMachine(draft, machine);
    if (failed) return { result: failed };
    const { registered, csrs } = await this.recordJoin(draft);
    return { machine, active: machine.state === "Active", registered, csrs, deadline };
  }

  /** The node's machine; asked for when it has none yet, and the node failed when the one it had is gone. */
  private async machineOf(
    draft: Draft,
    provider: MachineProvider,
    created: number,
    ctx: ReconcileContext,
  ): Promise<{ machine: Machine } | Stop> {
    const { node, status } = draft;
    const machine = await provider.findMachine(this.owner(node), ctx.signal);
    if (machine && machine.state !== "Deleting") return { machine };
    if (status.machine?.id) {
      return {
        result: this.fail(
          draft,
          "MachineVanished",
          `the machine ${status.machine.id} is gone from provider "${node.spec.provider}"`,
          { vanished: true },
        ),
      };
    }
    // The cache may not show yet what the last reconcile wrote (Failed, or the machine it asked
    // for): asking for a machine is the one step to take on the object as stored.
    if (await this.writtenSinceCached(node)) return { result: requeueAfter(200) };
    const overQuota = this.overQuota(node);
    if (overQuota) return { result: this.fail(draft, "QuotaExceeded", overQuota) };
    const token = this.tokenSecret(node);
    const joinToken = token ? tokenOfSecret(token) : undefined;
    if (!joinToken) {
      if (draft.now.getTime() - created < this.orphanGraceMs) return { result: requeueAfter(500) };
      return {
        result: this.fail(
          draft,
          "TokenMissing",
          `the node's bootstrap token Secret is gone (expired or deleted) before its machine was asked for`,
        ),
      };
    }
    if (joinToken.expiration.getTime() <= draft.now.getTime()) {
      return {
        result: this.fail(
          draft,
          "TokenExpired",
          `the node's bootstrap token expired at ${joinToken.expiration.toISOString()}`,
        ),
      };
    }
    status.bootstrapTokenId = joinToken.id;
    return this.createMachine(draft, provider, joinToken, ctx);
  }

  /** Asks the provider for the node's machine, the join configuration in its user data. */
  private async createMachine(
    draft: Draft,
    provider: MachineProvider,
    joinToken: BootstrapToken,
    ctx: ReconcileContext,
  ): Promise<{ machine: Machine } | Stop> {
    const { node } = draft;
    const name = node.metadata!.name!;
    let machine: Machine;
    try {
      machine = await provider.createMachine(
        {
          ...this.owner(node),
          flavor: node.spec.flavor,
          ...(node.spec.image ? { image: node.spec.image } : {}),
          ...(node.spec.keyPair ? { keyPair: node.spec.keyPair } : {}),
          ...(node.spec.securityGroups ? { securityGroups: node.spec.securityGroups } : {}),
          ...(node.spec.availabilityZone ? { availabilityZone: node.spec.availabilityZone } : {}),
          userData: renderUserData({
            ...this.joinTarget(),
            nodeName: name,
            token: joinToken,
            // The kubelet registers with what it may set; tenantry adds the rest once it has.
            labels: this.registration(node).kubeletLabels,
            taints: this.registration(node).taints,
          }),
        },
        ctx.signal,
      );
    } catch (err) {
      if (err instanceof ProviderError && err.permanent) {
        return {
          result: this.fail(
            draft,
            "ProviderRefused",
            `provider "${node.spec.provider}" refused the machine: ${err.message}`,
          ),
        };
      }
      condition(draft, {
        type: MACHINE_READY,
        status: "False",
        reason: "ProviderUnavailable",
        message: describeError(err),
      });
      throw err;
    }
    ctx.logger.info({ node: name, machine: machine.id }, "machine created");
    return { machine };
  }

  /** The machine in the status and its MachineReady condition; the result of failing the node if it is in Error. */
  private recordMachine(draft: Draft, machine: Machine): ReconcileResult | undefined {
    draft.status.machine = {
      id: machine.id,
      status: machine.status,
      ...(firstIpv4(machine.addresses) ? { ipv4: firstIpv4(machine.addresses)! } : {}),
      ...(machine.addresses.length ? { addresses: machine.addresses } : {}),
    };
    if (machine.state === "Error") {
      return this.fail(draft, "MachineFailed", `the machine failed: ${machine.message ?? machine.status}`);
    }
    const active = machine.state === "Active";
    condition(draft, {
      type: MACHINE_READY,
      status: active ? "True" : "False",
      reason: active
        ? "MachineActive"
        : machine.state === "Building"
          ? "MachineBuilding"
          : "MachineNotRunning",
      message: `machine ${machine.id} is ${machine.status}`,
    });
    return undefined;
  }

  /** How far the join got (Node registered, certificate asked for, or nothing yet): the Joined condition. */
  private async recordJoin(
    draft: Draft,
  ): Promise<{ registered: V1Node | undefined; csrs: V1CertificateSigningRequest[] }> {
    const { node, status } = draft;
    const name = node.metadata!.name!;
    const registered = this.registeredNode(name);
    const tokenId =
      status.bootstrapTokenId ??
      (this.tokenSecret(node) ? tokenOfSecret(this.tokenSecret(node)!)?.id : undefined);
    const csrs = tokenId ? this.options.informers.csrsBy(`${BOOTSTRAP_USER_PREFIX}${tokenId}`) : [];
    if (registered) {
      condition(draft, {
        type: JOINED,
        status: "True",
        reason: "NodeRegistered",
        message: `Node ${name} registered with its kubelet certificate`,
      });
      status.nodeName = name;
      // At once, not when Ready: the owner label (which its kubelet cannot set) goes on first.
      await this.keepRegistration(node, registered);
    } else if (csrs.length) {
      const csr = csrs[0]!;
      const state = csr.status?.certificate
        ? "issued"
        : csr.status?.conditions?.some((c) => c.type === "Approved")
          ? "approved"
          : "pending";
      condition(draft, {
        type: JOINED,
        status: "False",
        reason: "CertificateRequested",
        message: `kubelet client certificate ${csr.metadata?.name} ${state}`,
      });
    } else {
      condition(draft, {
        type: JOINED,
        status: "False",
        reason: "WaitingForMachine",
        message: "the machine has not asked to join yet",
      });
    }
    return { registered, csrs };
  }

  /** Whether the stored WorkerNode has moved on from the cached one (a newer status). */
  private async writtenSinceCached(node: WorkerNode): Promise<boolean> {
    try {
      const stored = (await this.options.client.objects.read({
        apiVersion: TENANTS_API_VERSION,
        kind: "WorkerNode",
        metadata: { name: node.metadata!.name! },
      })) as WorkerNode;
      return (
        stored.metadata?.uid !== node.metadata?.uid ||
        stored.metadata?.resourceVersion !== node.metadata?.resourceVersion
      );
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
  }

  private pastDeadline(draft: Draft, deadline: number): ReconcileResult | undefined {
    if (!joinTimedOut(draft.status, deadline, Date.now())) return undefined;
    const seconds = joinTimeoutSeconds(this.providerObject(draft.node));
    return this.failSync(
      draft,
      "JoinTimedOut",
      `the node was not Running within ${seconds}s (the provider's spec.joinTimeoutSeconds); its machine is deleted`,
    );
  }

  /** Why a node that has no machine yet is over its tenant's quota (two replicas admitting at once), or undefined. */
  private overQuota(node: WorkerNode): string | undefined {
    const tenantName = node.spec.tenant;
    if (!tenantName) return undefined;
    const tenant = this.options.tenants.tenants.get(undefined, tenantName);
    if (!tenant) return undefined;
    const max = tenant.spec.workerNodes?.maxNodes ?? 0;
    const ordered = this.options.informers
      .nodesOfTenant(tenantName)
      .sort(
        (a, b) =>
          String(a.metadata?.creationTimestamp).localeCompare(String(b.metadata?.creationTimestamp)) ||
          a.metadata!.name!.localeCompare(b.metadata!.name!),
      );
    const index = ordered.findIndex((n) => n.metadata?.uid === node.metadata?.uid);
    return index >= max
      ? `tenant "${tenantName}" allows ${max} worker node${max === 1 ? "" : "s"} (spec.workerNodes.maxNodes) and this one is number ${index + 1}`
      : undefined;
  }

  private joinTarget(): { server: string; caPem: string } {
    if (this.options.apiServer)
      return { server: this.options.apiServer.url, caPem: this.options.apiServer.caPem };
    const cluster = this.options.client.kubeConfig.getCurrentCluster()!;
    const caPem = cluster.caData ? Buffer.from(cluster.caData, "base64").toString() : "";
    return { server: cluster.server, caPem };
  }

  /** The labels and taints of the node's Node (see nodeRegistration). */
  private registration(node: WorkerNode): NodeRegistration {
    const tenant = node.spec.tenant
      ? this.options.tenants.tenants.get(undefined, node.spec.tenant)
      : undefined;
    return nodeRegistration(node, tenant);
  }

  /**
   * Keeps the registered Node labelled and tainted as the WorkerNode says, and owned by it. Labels
   * of earlier versions that a kubelet could change go (LEGACY_NODE_LABELS).
   */
  private async keepRegistration(node: WorkerNode, registered: V1Node): Promise<void> {
    const { kubeletLabels, tenantryLabels, taints } = this.registration(node);
    const labels = { ...kubeletLabels, ...tenantryLabels };
    const current = registered.metadata?.labels ?? {};
    const missingLabels = Object.entries(labels).filter(([k, v]) => current[k] !== v);
    const legacy = LEGACY_NODE_LABELS.filter((k) => k in current && !(k in labels));
    const currentTaints = registered.spec?.taints ?? [];
    // An owner taint other than the owner's own is removed (the policy or owner cannot change, but a Node can be edited).
    const kept = currentTaints.filter(
      (t) => t.key !== NODE_OWNER_TAINT || taints.some((w) => w.value === t.value && w.effect === t.effect),
    );
    const missingTaints = taints.filter(
      (w) => !kept.some((t) => t.key === w.key && t.value === w.value && t.effect === w.effect),
    );
    const owned = registered.metadata?.ownerReferences?.some((o) => o.uid === node.metadata?.uid);
    if (
      !missingLabels.length &&
      !legacy.length &&
      !missingTaints.length &&
      kept.length === currentTaints.length &&
      owned
    )
      return;
    await this.options.client.core.patchNode(
      {
        name: registered.metadata!.name!,
        body: {
          metadata: {
            resourceVersion: registered.metadata!.resourceVersion,
            // A merge patch removes a label given null.
            labels: {
              ...Object.fromEntries(missingLabels),
              ...Object.fromEntries(legacy.map((k) => [k, null])),
            },
            ...(owned
              ? {}
              : {
                  ownerReferences: [
                    ...(registered.metadata?.ownerReferences ?? []),
                    {
                      apiVersion: TENANTS_API_VERSION,
                      kind: "WorkerNode",
                      name: node.metadata!.name!,
                      uid: node.metadata!.uid!,
                    },
                  ],
                }),
          },
          spec: { taints: [...kept, ...missingTaints] },
        },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
  }

  // --- failure ----------------------------------------------------------------------------------

  private failSync(draft: Draft, reason: string, message: string): ReconcileResult {
    setPhase(draft, "Failed", reason, message);
    condition(draft, { type: READY, status: "False", reason, message });
    return requeueAfter(100);
  }

  private fail(
    draft: Draft,
    reason: string,
    message: string,
    options: { vanished?: boolean } = {},
  ): ReconcileResult {
    this.options.logger.warn({ node: draft.node.metadata?.name, reason, message }, "worker node failed");
    if (options.vanished) {
      condition(draft, { type: MACHINE_READY, status: "False", reason, message });
      if (draft.status.machine) draft.status.machine.status = "DELETED";
    }
    return this.failSync(draft, reason, message);
  }

  /** A Failed node keeps its status for its owner to read; its machine, Node and token go. */
  private async cleanUpFailed(draft: Draft): Promise<ReconcileResult> {
    const gone = await this.removeEverything(draft);
    return gone ? reconcileDone() : requeueAfter(this.pollMs);
  }

  /** Deletes the Node, the machine and the tokens; true once the machine is gone. */
  private async removeEverything(draft: Draft): Promise<boolean> {
    const { node, status } = draft;
    const name = node.metadata!.name!;
    const registered = this.registeredNode(name);
    if (registered) {
      await this.options.client.core.deleteNode({ name }).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
    }
    await this.removeTokens(node);
    delete status.bootstrapTokenId;
    const object = this.providerObject(node);
    if (!object) {
      condition(draft, {
        type: MACHINE_READY,
        status: "Unknown",
        reason: "ProviderMissing",
        message: `NodeProvider "${node.spec.provider}" does not exist: the machine cannot be deleted`,
      });
      return !status.machine || status.machine.status === "DELETED";
    }
    const provider = await this.providerClient(node);
    const machine = await provider.findMachine(this.owner(node));
    if (!machine) {
      if (status.machine) status.machine.status = "DELETED";
      return true;
    }
    if (machine.state !== "Deleting") await provider.deleteMachine(machine);
    if (status.machine) status.machine.status = machine.state === "Deleting" ? machine.status : "DELETING";
    return false;
  }

  private async removeTokens(node: WorkerNode): Promise<void> {
    await Promise.all(
      this.options.informers.tokensOf(node.metadata!.name!).map((secret) => this.deleteSecret(secret)),
    );
  }

  private async deleteSecret(secret: V1Secret): Promise<void> {
    await this.options.client.core
      .deleteNamespacedSecret({ name: secret.metadata!.name!, namespace: secret.metadata!.namespace! })
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
  }

  /**
   * Tokens made by admission for a WorkerNode that never came to be (its create failed after the
   * webhook) or that is gone: deleted once old enough that the cache cannot simply be behind.
   */
  private async removeOrphanTokens(name: string): Promise<void> {
    const now = Date.now();
    for (const secret of this.options.informers.tokensOf(name)) {
      const age = now - Date.parse(String(secret.metadata?.creationTimestamp));
      if (age >= this.orphanGraceMs) await this.deleteSecret(secret);
      else this.controller.enqueueAfter(this.key(name), this.orphanGraceMs - age + 100);
    }
  }

  // --- deletion ---------------------------------------------------------------------------------

  private async finalize(draft: Draft, ctx: ReconcileContext): Promise<ReconcileResult> {
    const { node, status } = draft;
    if (!node.metadata?.finalizers?.includes(WORKER_NODE_FINALIZER)) return reconcileDone();
    const name = node.metadata!.name!;
    if (status.phase !== "Deleting")
      setPhase(draft, "Deleting", "Deleting", "draining and deleting the node");
    const registered = this.registeredNode(name);
    if (registered) {
      await cordon(this.options.client, registered);
      const progress = await evictPods(this.options.client, name);
      if (progress.remaining.length) {
        const previous = findCondition(draft.status.conditions as Condition[] | undefined, DRAINED);
        const started =
          previous && previous.status === "False"
            ? Date.parse(previous.lastTransitionTime)
            : draft.now.getTime();
        const timeout = (node.spec.drainTimeoutSeconds ?? DEFAULT_DRAIN_TIMEOUT_SECONDS) * 1000;
        const blocked = progress.blocked.map((b) => `${b.pod} (${b.reason})`).join("; ");
        const waiting = `${progress.remaining.length} pod${progress.remaining.length === 1 ? "" : "s"} left: ${progress.remaining.slice(0, 10).join(", ")}`;
        if (draft.now.getTime() - started >= timeout) {
          const message = `drain did not finish within ${timeout / 1000}s (spec.drainTimeoutSeconds); still evicting, PodDisruptionBudgets respected. ${waiting}${blocked ? `. Refused: ${blocked}` : ""}`;
          condition(draft, { type: DRAINED, status: "False", reason: "DrainTimedOut", message });
          setPhase(draft, "Deleting", "DrainTimedOut", message);
          if (previous?.reason !== "DrainTimedOut")
            ctx.logger.warn({ node: name, message }, "drain timed out");
        } else {
          condition(draft, {
            type: DRAINED,
            status: "False",
            reason: "Draining",
            message: `${waiting}${blocked ? `. Refused for now: ${blocked}` : ""}`,
          });
        }
        return requeueAfter(2_000);
      }
      condition(draft, {
        type: DRAINED,
        status: "True",
        reason: "Drained",
        message: "every pod was evicted",
      });
      setPhase(draft, "Deleting", "Drained", "pods evicted; deleting the Node and the machine");
    }
    const gone = await this.removeEverything(draft);
    if (!gone) return requeueAfter(this.pollMs);
    await removeFinalizer(this.options.client.objects, node, WORKER_NODE_FINALIZER);
    ctx.logger.info({ node: name }, "worker node deleted");
    return reconcileDone();
  }
}
