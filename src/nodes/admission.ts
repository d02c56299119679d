/**
 * The nodes capability's admission webhooks (CloudVeneto CaaS, steps 2 and 11):
 * - a new WorkerNode gets its owner (the requester) and tenant stamped, is checked against its
 *   provider's flavors and its tenant's spec.workerNodes, and gets its bootstrap token Secret;
 * - only its owner, its tenant's owners and cluster administrators may change or delete it;
 * - pods get the toleration of their user's private nodes, and are kept off everyone else's;
 * - a bootstrap token of a WorkerNode may only ask for that node's kubelet certificate.
 * Decisions read the informers' caches only (the tenant of a just-created namespace excepted).
 */
import { CustomObjectsApi, type V1CertificateSigningRequest } from "@kubernetes/client-node";
import { type ClusterClient, Expectations, isAlreadyExists, isNotFound } from "../kube/index.js";
import { certificateRequestSubject } from "../pki/index.js";
import {
  isClusterAdmin,
  isSystemComponent,
  KeyedMutex,
  type Requester,
  TENANT_LABEL,
  TENANTRY_GROUP,
  TENANTS_VERSION,
  type Tenant,
  type TenantInformers,
  tenantNameOfNamespace,
  tenantRole,
  tenantryIdentity,
  USER_LABEL,
  userLabelValue,
} from "../tenants/index.js";
import {
  type AdmissionCheck,
  type AdmissionDecision,
  type AdmissionRequest,
  allow,
  deny,
  type JsonPatchOperation,
  setLabelsPatch,
} from "../webhooks/index.js";
import { DEFAULT_JOIN_TIMEOUT_SECONDS, type NodeProvider } from "./api/node-provider.js";
import type { WorkerNode } from "./api/worker-node.js";
import type { NodeInformers } from "./informers.js";
import { bootstrapTokenSecret, bootstrapTokenSecretName, newBootstrapToken, tokenIdOfUser } from "./join.js";
import {
  BOOTSTRAP_NAMESPACE,
  KUBELET_CLIENT_SIGNER,
  NODE_OWNER_LABEL,
  NODE_OWNER_TAINT,
  WORKER_NODE_LABEL,
} from "./labels.js";
import { type PodScheduling, placementViolation, placePod } from "./placement.js";

export interface NodeAdmissionOptions {
  client: ClusterClient;
  informers: NodeInformers;
  tenants: TenantInformers;
  /** tenantry's namespace (its service accounts are cluster components). */
  ownNamespace: string;
}

const BAD_INPUT = 400;

/**
 * What kube-apiserver sends has passed the CRD's schema; anything else reaching the webhook is
 * refused naming what is missing rather than failing on it.
 */
function malformedWorkerNode(object: unknown, field: "object" | "oldObject"): AdmissionDecision | undefined {
  const node = object as { metadata?: { name?: unknown }; spec?: unknown } | undefined;
  if (typeof node?.metadata?.name !== "string") {
    return deny(`request.${field}.metadata.name: a WorkerNode has a name`, BAD_INPUT);
  }
  if (node.spec !== undefined && (typeof node.spec !== "object" || node.spec === null)) {
    return deny(`request.${field}.spec: must be an object`, BAD_INPUT);
  }
  return undefined;
}
const FORBIDDEN = 403;
const CONFLICT = 409;
const UNAVAILABLE = 503;

/** How long an admitted WorkerNode counts against its tenant's quota before the cache shows it. */
const RESERVATION_MS = 30_000;

function quoted(names: readonly string[]): string {
  return names.length ? names.map((n) => `"${n}"`).join(", ") : "none";
}

/** The provider's join timeout: how long a node may take to be Running, and its token's lifetime. */
export function joinTimeoutSeconds(provider: NodeProvider | undefined): number {
  return provider?.spec.joinTimeoutSeconds ?? DEFAULT_JOIN_TIMEOUT_SECONDS;
}

/**
 * WorkerNodes admitted but not yet in the cache, per tenant: concurrent requests for one tenant
 * are decided one at a time, each counting the ones before it.
 */
class QuotaReservations {
  /** By the admitted WorkerNode's uid. */
  private readonly pending: Expectations<{ tenant: string; name: string }>;
  private readonly mutex = new KeyedMutex();

  constructor(private readonly informers: NodeInformers) {
    this.pending = new Expectations({
      ttlMs: RESERVATION_MS,
      seen: (uid, { name }) => this.informers.workerNodes.get(undefined, name)?.metadata?.uid === uid,
    });
  }

  run<T>(tenant: string, fn: () => Promise<T>): Promise<T> {
    return this.mutex.run(tenant, fn);
  }

  /** The tenant's WorkerNodes, cached or just admitted. */
  count(tenant: string): number {
    const admitted = this.pending.pending().filter(([, entry]) => entry.tenant === tenant);
    return this.informers.nodesOfTenant(tenant).length + admitted.length;
  }

  release(uid: string): void {
    this.pending.forget(uid);
  }

  reserve(tenant: string, name: string, uid: string): void {
    this.pending.expect(uid, { tenant, name });
  }
}

const workerNodeRule = (operations: string[]) => ({
  apiGroups: [TENANTRY_GROUP],
  apiVersions: [TENANTS_VERSION],
  operations,
  resources: ["workernodes"],
  scope: "Cluster",
});

export const podRule = (operations: string[]) => ({
  apiGroups: [""],
  apiVersions: ["v1"],
  operations,
  resources: ["pods"],
  scope: "Namespaced",
});

/** CEL: the pod has a toleration that could reach private nodes (the handler decides whose). */
const TOLERATES_PRIVATE = `has(object.spec.tolerations) && object.spec.tolerations.exists(t, (has(t.key) && t.key == '${NODE_OWNER_TAINT}') || ((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists'))`;

type PodTolerations = { spec?: { nodeName?: string; tolerations?: { key?: string; operator?: string }[] } };

const toleratesPrivate = (pod: PodTolerations | undefined): boolean =>
  (pod?.spec?.tolerations ?? []).some(
    (t) => t.key === NODE_OWNER_TAINT || (!t.key && t.operator === "Exists"),
  );

/**
 * The guard's match condition, in process, for when it runs in the dispatcher's shared entry: the
 * pods that could reach a private node in spite of its taint.
 */
export function mayReachPrivateNodes(request: AdmissionRequest): boolean {
  const pod = request.object as PodTolerations | undefined;
  if (request.operation === "CREATE") return Boolean(pod?.spec?.nodeName) || toleratesPrivate(pod);
  return !(request.oldObject as PodTolerations | undefined)?.spec?.nodeName && toleratesPrivate(pod);
}

export class NodeAdmission {
  private readonly reservations: QuotaReservations;
  private readonly identity;
  private readonly customObjects: CustomObjectsApi;

  constructor(private readonly options: NodeAdmissionOptions) {
    this.reservations = new QuotaReservations(options.informers);
    this.customObjects = options.client.kubeConfig.makeApiClient(CustomObjectsApi);
    this.identity = tenantryIdentity("", options.ownNamespace);
  }

  webhooks(): AdmissionCheck[] {
    return [
      {
        name: "workernode-owner.nodes.tenantry.dev",
        kind: "mutating",
        path: "/mutate/workernodes",
        // Fail: a WorkerNode without its owner would be nobody's, and count against no quota.
        failurePolicy: "Fail",
        rules: [workerNodeRule(["CREATE"])],
        handle: (request) => this.stampOwner(request),
      },
      {
        name: "workernodes.nodes.tenantry.dev",
        kind: "validating",
        path: "/validate/workernodes",
        // Fail: quota, flavors and who may delete a node are decided here only.
        failurePolicy: "Fail",
        sideEffects: "NoneOnDryRun",
        timeoutSeconds: 10,
        // It reserves the tenant's worker-node quota: only once every other check allowed.
        reserves: true,
        rules: [workerNodeRule(["CREATE", "UPDATE", "DELETE"])],
        handle: (request) => this.validateWorkerNode(request),
      },
      {
        name: "pod-private-nodes.nodes.tenantry.dev",
        kind: "mutating",
        path: "/mutate/pods/private-nodes",
        // Ignore: this only lets owners onto their own nodes and adds the exclusion early; the
        // validating webhook below is what keeps everyone else off, and it fails closed.
        failurePolicy: "Ignore",
        rules: [podRule(["CREATE"])],
        handle: (request) => this.placePod(request),
      },
      {
        name: "pod-private-nodes-guard.nodes.tenantry.dev",
        kind: "validating",
        path: "/validate/pods/private-nodes",
        // Fail, but only for the pods that could reach a private node in spite of its taint.
        failurePolicy: "Fail",
        rules: [podRule(["CREATE", "UPDATE"])],
        matchConditions: [
          {
            name: "may-reach-private-nodes",
            expression: `request.operation == 'CREATE' ? (has(object.spec.nodeName) || (${TOLERATES_PRIVATE})) : (!has(oldObject.spec.nodeName) && (${TOLERATES_PRIVATE}))`,
          },
        ],
        matches: mayReachPrivateNodes,
        handle: (request) => this.guardPod(request),
      },
      {
        name: "bootstrap-csr.nodes.tenantry.dev",
        kind: "validating",
        path: "/validate/certificatesigningrequests/bootstrap",
        // Fail, for bootstrap tokens only: a WorkerNode's token must not name another node.
        failurePolicy: "Fail",
        rules: [
          {
            apiGroups: ["certificates.k8s.io"],
            apiVersions: ["v1"],
            operations: ["CREATE"],
            resources: ["certificatesigningrequests"],
            scope: "Cluster",
          },
        ],
        matchConditions: [
          {
            name: "bootstrap-token-requests",
            expression: "request.userInfo.username.startsWith('system:bootstrap:')",
          },
        ],
        ownEntry: "only bootstrap tokens' CSRs are sent, never an ordinary request",
        handle: (request) => this.guardBootstrapCsr(request),
      },
    ];
  }

  // --- WorkerNode ------------------------------------------------------------------------------

  private isPrivileged(requester: Requester): boolean {
    return isClusterAdmin(requester) || isSystemComponent(requester, this.identity);
  }

  private async tenant(name: string): Promise<Tenant | undefined> {
    const cached = this.options.tenants.tenants.get(undefined, name);
    if (cached) return cached;
    try {
      return (await this.customObjects.getClusterCustomObject({
        group: TENANTRY_GROUP,
        version: TENANTS_VERSION,
        plural: "tenants",
        name,
      })) as Tenant;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async stampOwner(request: AdmissionRequest): Promise<AdmissionDecision> {
    if (request.operation !== "CREATE") return allow();
    const malformed = malformedWorkerNode(request.object, "object");
    if (malformed) return malformed;
    const node = request.object as unknown as WorkerNode;
    const requester: Requester = request.userInfo;
    const asked = node.spec?.owner;
    if (asked !== undefined && asked !== requester.username && !this.isPrivileged(requester)) {
      return deny(
        `spec.owner: "${asked}" is not you ("${requester.username ?? ""}"): users ask for worker nodes for themselves only (cluster administrators may name an owner)`,
        FORBIDDEN,
      );
    }
    const owner = asked ?? requester.username;
    if (!owner) return deny("spec.owner: the request names no user", BAD_INPUT);
    // The requester's own groups count only when the node is theirs.
    const who: Requester = owner === requester.username ? requester : { username: owner };
    let tenantName = node.spec?.tenant;
    if (tenantName) {
      const tenant = await this.tenant(tenantName);
      if (!tenant || !tenantRole(tenant, who)) {
        return deny(`spec.tenant: "${owner}" is not a member of tenant "${tenantName}"`, FORBIDDEN);
      }
    } else {
      const memberships = this.options.tenants.membershipsOf(who).map((m) => m.tenant.metadata!.name!);
      if (memberships.length === 0) {
        return deny(
          `spec.owner: "${owner}" belongs to no tenant; a worker node counts against its tenant's spec.workerNodes`,
          FORBIDDEN,
        );
      }
      if (memberships.length > 1) {
        return deny(
          `spec.tenant: "${owner}" belongs to tenants ${quoted(memberships)}: name the one the node counts against`,
          BAD_INPUT,
        );
      }
      tenantName = memberships[0]!;
    }
    const ops: JsonPatchOperation[] = [];
    if (!node.spec) ops.push({ op: "add", path: "/spec", value: { owner, tenant: tenantName } });
    else {
      ops.push({ op: "add", path: "/spec/owner", value: owner });
      ops.push({ op: "add", path: "/spec/tenant", value: tenantName });
    }
    ops.push(
      ...setLabelsPatch(node as never, { [USER_LABEL]: userLabelValue(owner), [TENANT_LABEL]: tenantName }),
    );
    return allow(ops);
  }

  /** Whether the requester may change or delete the node: its owner, its tenant's owners, administrators. */
  private async mayManage(requester: Requester, node: WorkerNode): Promise<boolean> {
    if (this.isPrivileged(requester)) return true;
    if (requester.username && requester.username === node.spec?.owner) return true;
    const tenant = node.spec?.tenant ? await this.tenant(node.spec.tenant) : undefined;
    return tenant !== undefined && tenantRole(tenant, requester) === "owner";
  }

  private notYours(node: WorkerNode, verb: string): AdmissionDecision {
    return deny(
      `WorkerNode "${node.metadata!.name}" belongs to "${node.spec?.owner ?? ""}": only they, the owners of tenant "${node.spec?.tenant ?? ""}" and cluster administrators may ${verb} it`,
      FORBIDDEN,
    );
  }

  async validateWorkerNode(request: AdmissionRequest): Promise<AdmissionDecision> {
    const requester: Requester = request.userInfo;
    if (request.operation === "DELETE") {
      const node = request.oldObject as unknown as WorkerNode | undefined;
      if (!node) return allow();
      const malformed = malformedWorkerNode(node, "oldObject");
      if (malformed) return malformed;
      return (await this.mayManage(requester, node)) ? allow() : this.notYours(node, "delete");
    }
    if (request.operation === "UPDATE") {
      const malformed =
        malformedWorkerNode(request.oldObject, "oldObject") ?? malformedWorkerNode(request.object, "object");
      if (malformed) return malformed;
      const before = request.oldObject as unknown as WorkerNode;
      const after = request.object as unknown as WorkerNode;
      if (this.isPrivileged(requester)) return allow();
      if (!(await this.mayManage(requester, before))) return this.notYours(before, "change");
      for (const key of [USER_LABEL, TENANT_LABEL]) {
        if (before.metadata?.labels?.[key] !== after.metadata?.labels?.[key]) {
          return deny(`metadata.labels[${key}]: set by tenantry from spec.owner and spec.tenant`, FORBIDDEN);
        }
      }
      return allow();
    }
    if (request.operation !== "CREATE") return allow();
    const malformed = malformedWorkerNode(request.object, "object");
    if (malformed) return malformed;
    return this.admitNew(request.object as unknown as WorkerNode, request.dryRun === true);
  }

  private async admitNew(node: WorkerNode, dryRun: boolean): Promise<AdmissionDecision> {
    const { informers } = this.options;
    const name = node.metadata!.name!;
    const spec = node.spec;
    if (!spec) return deny("spec: a WorkerNode names its provider and flavor", BAD_INPUT);
    const provider = informers.providers.get(undefined, spec.provider);
    if (!provider) {
      const known = informers.providers.list().map((p) => p.metadata!.name!);
      return deny(
        `spec.provider: there is no NodeProvider "${spec.provider}" (there are: ${quoted(known)})`,
        BAD_INPUT,
      );
    }
    const flavors = provider.status?.flavors ?? [];
    if (flavors.length === 0) {
      const ready = provider.status?.conditions?.find((c) => c.type === "Ready");
      return deny(
        `spec.provider: NodeProvider "${spec.provider}" has not listed its flavors yet${ready ? ` (${ready.reason}: ${ready.message})` : ""}; try again shortly`,
        UNAVAILABLE,
      );
    }
    if (!flavors.some((f) => f.name === spec.flavor)) {
      return deny(
        `spec.flavor: NodeProvider "${spec.provider}" offers no flavor "${spec.flavor}" (it offers: ${quoted(flavors.map((f) => f.name))})`,
        BAD_INPUT,
      );
    }
    const tenantName = spec.tenant;
    const tenant = tenantName ? await this.tenant(tenantName) : undefined;
    if (!tenantName || !tenant)
      return deny(`spec.tenant: tenant "${tenantName ?? ""}" does not exist`, BAD_INPUT);
    const allowed = tenant.spec.workerNodes;
    if (!allowed) {
      return deny(
        `spec.tenant: tenant "${tenantName}" may not ask for worker nodes (its spec.workerNodes is not set)`,
        FORBIDDEN,
      );
    }
    if (allowed.providers && !allowed.providers.includes(spec.provider)) {
      return deny(
        `spec.provider: NodeProvider "${spec.provider}" is not allowed in tenant "${tenantName}" (spec.workerNodes.providers: ${quoted(allowed.providers)})`,
        FORBIDDEN,
      );
    }
    if (allowed.flavors && !allowed.flavors.includes(spec.flavor)) {
      return deny(
        `spec.flavor: flavor "${spec.flavor}" is not allowed in tenant "${tenantName}" (spec.workerNodes.flavors: ${quoted(allowed.flavors)})`,
        FORBIDDEN,
      );
    }
    const existing = informers.nodes.get(undefined, name);
    if (existing && existing.metadata?.labels?.[WORKER_NODE_LABEL] !== name) {
      return deny(
        `metadata.name: a Node named "${name}" already exists in the cluster; choose another name`,
        CONFLICT,
      );
    }
    // The name is taken: the API server answers AlreadyExists after admission; no token, no quota.
    if (informers.workerNodes.get(undefined, name)) return allow();
    const uid = node.metadata?.uid ?? "";
    // Counting and reserving are one step per tenant; the token is made outside it, so that
    // requests for many nodes at once wait for one another only that long.
    const refusal = await this.reservations.run(tenantName, async () => {
      const used = this.reservations.count(tenantName);
      if (used >= allowed.maxNodes) {
        return deny(
          `tenant "${tenantName}" has ${used} worker node${used === 1 ? "" : "s"} of the ${allowed.maxNodes} its spec.workerNodes.maxNodes allows: delete one first`,
          FORBIDDEN,
        );
      }
      if (!dryRun) this.reservations.reserve(tenantName, name, uid);
      return undefined;
    });
    if (refusal) return refusal;
    if (dryRun) return allow();
    try {
      await this.createToken(name, uid, joinTimeoutSeconds(provider));
    } catch (err) {
      this.reservations.release(uid);
      throw err;
    }
    return allow();
  }

  /** The node's bootstrap token (CloudVeneto CaaS, step 2), expiring when the node must be Running. */
  private async createToken(name: string, uid: string, timeoutSeconds: number): Promise<void> {
    const expiration = new Date(Date.now() + timeoutSeconds * 1000);
    for (let attempt = 1; ; attempt++) {
      const token = newBootstrapToken(expiration);
      try {
        await this.options.client.core.createNamespacedSecret({
          namespace: BOOTSTRAP_NAMESPACE,
          body: bootstrapTokenSecret(token, { name, uid }),
        });
        return;
      } catch (err) {
        // Another token has this id (one in 36^6): draw again.
        if (!isAlreadyExists(err) || attempt >= 3) throw err;
      }
    }
  }

  // --- pods ------------------------------------------------------------------------------------

  private async isTenantNamespace(namespace: string): Promise<boolean> {
    return (await tenantNameOfNamespace(this.options.tenants, namespace)) !== undefined;
  }

  /**
   * Whose pod this is, as a user label value: the requester's, unless a cluster component creates
   * it for someone (a ReplicaSet's pod), when it is the user label the tenants' webhooks stamped
   * on its template — trusted only in tenant namespaces, where nobody else can write it.
   */
  async podUser(request: AdmissionRequest): Promise<string | undefined> {
    const requester: Requester = request.userInfo;
    if (!isSystemComponent(requester, this.identity)) {
      return requester.username ? userLabelValue(requester.username) : undefined;
    }
    const label = (request.object as { metadata?: { labels?: Record<string, string> } })?.metadata?.labels?.[
      USER_LABEL
    ];
    if (!label || !request.namespace) return undefined;
    return (await this.isTenantNamespace(request.namespace)) ? label : undefined;
  }

  private ownsPrivateNodes(user: string): boolean {
    return this.options.informers.privateNodesOf(user).some((n) => !n.metadata?.deletionTimestamp);
  }

  /** The owner (user label value) of a private worker node by name, or undefined for any other node. */
  private ownerOfNode(name: string): string | undefined {
    const workerNode = this.options.informers.workerNodes.get(undefined, name);
    if (workerNode?.spec.policy === "private" && workerNode.spec.owner)
      return userLabelValue(workerNode.spec.owner);
    return this.options.informers.nodes.get(undefined, name)?.metadata?.labels?.[NODE_OWNER_LABEL];
  }

  async placePod(request: AdmissionRequest): Promise<AdmissionDecision> {
    if (request.operation !== "CREATE" || request.subResource) return allow();
    const pod = request.object as { spec?: PodScheduling };
    const user = await this.podUser(request);
    const placed = placePod(pod.spec ?? {}, user, user ? this.ownsPrivateNodes(user) : false);
    if (!placed) return allow();
    const ops: JsonPatchOperation[] = [];
    if (placed.tolerations !== pod.spec?.tolerations)
      ops.push({ op: "add", path: "/spec/tolerations", value: placed.tolerations });
    if (placed.affinity !== pod.spec?.affinity)
      ops.push({ op: "add", path: "/spec/affinity", value: placed.affinity });
    return allow(ops);
  }

  async guardPod(request: AdmissionRequest): Promise<AdmissionDecision> {
    if (request.subResource) return allow();
    const pod = (request.object as { spec?: PodScheduling }).spec ?? {};
    if (request.operation === "UPDATE") {
      const before = (request.oldObject as { spec?: PodScheduling } | undefined)?.spec;
      if (before?.nodeName) return allow();
    }
    const user = await this.podUser(request);
    const violation = placementViolation(pod, user, (name) => this.ownerOfNode(name));
    return violation ? deny(violation, FORBIDDEN) : allow();
  }

  // --- bootstrap CSRs ----------------------------------------------------------------------------

  async guardBootstrapCsr(request: AdmissionRequest): Promise<AdmissionDecision> {
    const id = tokenIdOfUser(request.userInfo.username);
    if (!id) return allow();
    const secretName = bootstrapTokenSecretName(id);
    let secret = this.options.informers.tokens.get(BOOTSTRAP_NAMESPACE, secretName);
    if (!secret) {
      secret = await this.options.client.core
        .readNamespacedSecret({ name: secretName, namespace: BOOTSTRAP_NAMESPACE })
        .catch((err: unknown) => {
          if (isNotFound(err)) return undefined;
          throw err;
        });
    }
    // kube-apiserver remembers a token it authenticated for a few seconds: one deleted meanwhile
    // (used by its node, or expired) must not get a certificate in that window.
    if (!secret) {
      return deny(
        `spec.username: bootstrap token "${id}" does not exist any more (used, expired or revoked)`,
        FORBIDDEN,
      );
    }
    const node = secret.metadata?.labels?.[WORKER_NODE_LABEL];
    // Not one of tenantry's tokens (kubeadm's, say): the cluster's own rules apply.
    if (!node) return allow();
    const csr = request.object as unknown as V1CertificateSigningRequest;
    if (csr.spec?.signerName !== KUBELET_CLIENT_SIGNER) {
      return deny(
        `spec.signerName: the bootstrap token of worker node "${node}" may only ask for a kubelet client certificate (${KUBELET_CLIENT_SIGNER})`,
        FORBIDDEN,
      );
    }
    let commonName: string | undefined;
    try {
      commonName = certificateRequestSubject(Buffer.from(csr.spec.request, "base64").toString()).commonName;
    } catch {
      return deny("spec.request: not a PEM-encoded PKCS#10 certificate request", BAD_INPUT);
    }
    const expected = `system:node:${node}`;
    if (commonName !== expected) {
      return deny(
        `spec.request: the bootstrap token of worker node "${node}" may only ask for the certificate of ${expected}, not "${commonName ?? ""}"`,
        FORBIDDEN,
      );
    }
    return allow();
  }
}
