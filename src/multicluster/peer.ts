/**
 * Peering two clusters with the administrator credentials of both (the operator owns both), and
 * undoing it. The consumer gets, in the provider, a tenant of its own (bounded namespaces and
 * resources) and a client certificate the provider signs through its CertificateSigningRequest
 * API; the private key is made here and stored only in the consumer. Nothing here ever gives a
 * cluster more than that tenant in its peer.
 */

import { readFileSync } from "node:fs";
import type {
  KubernetesObject,
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1Node,
  V1Role,
  V1RoleBinding,
  V1Secret,
} from "@kubernetes/client-node";
import { errorMessage, pollUntil, UserError } from "../common/index.js";
import { MIN_EXPIRATION_SECONDS, requestUserCertificate, type UserCredentials } from "../identity/index.js";
import {
  type ClusterClient,
  type Condition,
  describeError,
  findCondition,
  isNotFound,
  kubeconfigYaml,
  statusCode,
} from "../kube/index.js";
import { TENANTS_API_VERSION, type Tenant } from "../tenants/index.js";
import { MCS_GROUP } from "./api/mcs.js";
import type { Peering } from "./api/peering.js";
import { CLUSTER_IDENTITY_CONFIGMAP, type ClusterIdentity, readClusterIdentity } from "./identity.js";
import { exchangeConfigMap, peerNetworkRules } from "./network/exchange.js";
import { PEER_CERTIFICATE_SECONDS_ANNOTATION } from "./peer-certificates.js";
import { KUBECONFIG_KEY } from "./remote.js";
import { PEERING_LABEL, virtualNodeName } from "./virtual-node.js";

export const DEFAULT_NAMESPACE = "tenantry-system";
/** On the provider's objects for a peer: which consumer cluster they serve. */
export const PEER_CLUSTER_ID_LABEL = "tenantry.dev/peer-cluster-id";
export const PEER_CLUSTER_NAME_LABEL = "tenantry.dev/peer-cluster-name";
/** Peer certificates last 30 days (the approval policy's maximum). */
export const PEER_CERTIFICATE_SECONDS = 30 * 24 * 3600;

/** The username the provider knows a consumer cluster by. */
export function peerUsername(consumerId: string): string {
  return `tenantry-peer:${consumerId}`;
}
export function peerTenantName(consumerName: string): string {
  return `peer-${consumerName}`;
}
/**
 * Role and RoleBinding in the provider's tenantry namespace: read its identity, nothing else; and
 * a ClusterRole and ClusterRoleBinding of the same name: create and read certificate signing
 * requests, to renew its certificate (the provider's tenantry approves only its own).
 */
export function peerRoleName(consumerName: string): string {
  return `tenantry-peer-${consumerName}`;
}
/** The consumer's Secret holding the kubeconfig for the provider. */
export function peerSecretName(providerName: string): string {
  return `tenantry-peer-${providerName}`;
}

type Side = "consumer" | "provider";

/** A failure in one cluster, named as such. */
export class PeeringError extends Error {
  constructor(
    readonly side: Side,
    readonly cluster: string,
    message: string,
  ) {
    super(`${side} cluster "${cluster}": ${message}`);
    this.name = "PeeringError";
  }
}

export interface PeerOptions {
  consumer: ClusterClient;
  provider: ClusterClient;
  /** tenantry's namespace, the same in both clusters. */
  namespace?: string;
  /** How many namespaces the consumer may create in the provider (at least 1). */
  namespaceQuota: number;
  /** Granted capacity: the tenant's quota in the provider, the virtual node's capacity in the consumer. */
  resources: Record<string, string>;
  expirationSeconds?: number;
  /** How long to wait for the provider's tenant and then the consumer's peering to be Ready. */
  timeoutMs?: number;
  onProgress?: (side: Side, cluster: string, message: string) => void;
}

export interface PeerResult {
  consumer: ClusterIdentity;
  provider: ClusterIdentity;
  peering: string;
  virtualNode: string;
  tenant: string;
  username: string;
  certificateExpiresAt?: Date;
  /** Milliseconds per step, for the curious and the benchmarks. */
  timings: Record<string, number>;
}

interface Created {
  side: Side;
  client: ClusterClient;
  object: KubernetesObject;
}

function describeObject(object: KubernetesObject): string {
  const ns = object.metadata?.namespace;
  return `${object.kind} ${ns ? `${ns}/` : ""}${object.metadata?.name}`;
}

async function deleteObject(client: ClusterClient, object: KubernetesObject): Promise<boolean> {
  try {
    await client.objects.delete(
      {
        apiVersion: object.apiVersion,
        kind: object.kind,
        metadata: {
          name: object.metadata!.name!,
          ...(object.metadata?.namespace ? { namespace: object.metadata.namespace } : {}),
        },
      },
      undefined,
      undefined,
      undefined,
      undefined,
      "Background",
    );
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** What the object API needs to find an object. */
function header(object: KubernetesObject) {
  return {
    apiVersion: object.apiVersion!,
    kind: object.kind!,
    metadata: {
      name: object.metadata!.name!,
      ...(object.metadata?.namespace ? { namespace: object.metadata.namespace } : {}),
    },
  };
}

async function exists(client: ClusterClient, object: KubernetesObject): Promise<boolean> {
  try {
    await client.objects.read(header(object));
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** Reads both identities and refuses a cluster peering with itself. */
async function identities(
  consumer: ClusterClient,
  provider: ClusterClient,
  namespace: string,
): Promise<{ consumer: ClusterIdentity; provider: ClusterIdentity }> {
  const [c, p] = await Promise.allSettled([
    readClusterIdentity(consumer, namespace, "consumer"),
    readClusterIdentity(provider, namespace, "provider"),
  ]);
  if (c.status === "rejected") throw c.reason;
  if (p.status === "rejected") throw p.reason;
  if (c.value.clusterId === p.value.clusterId) {
    throw new UserError(
      `consumer "${consumer.name}" and provider "${provider.name}" are the same cluster (id ${c.value.clusterId}): a cluster cannot peer with itself`,
    );
  }
  return { consumer: c.value, provider: p.value };
}

/**
 * ServiceImports, the imported EndpointSlices and the status of ServiceExports: the namespace admin
 * role has none of them (it reads EndpointSlices only).
 */
export const MCS_PEER_PERMISSIONS = [
  {
    apiGroups: ["discovery.k8s.io"],
    resources: ["endpointslices"],
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
  },
  {
    apiGroups: [MCS_GROUP],
    resources: ["serviceimports"],
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
  },
  {
    apiGroups: [MCS_GROUP],
    resources: ["serviceimports/status", "serviceexports/status"],
    verbs: ["get", "update", "patch"],
  },
];

function peerTenant(consumer: ClusterIdentity, options: PeerOptions): Tenant {
  return {
    apiVersion: TENANTS_API_VERSION,
    kind: "Tenant",
    metadata: {
      name: peerTenantName(consumer.clusterName),
      labels: {
        [PEER_CLUSTER_ID_LABEL]: consumer.clusterId,
        [PEER_CLUSTER_NAME_LABEL]: consumer.clusterName,
        "app.kubernetes.io/managed-by": "tenantry",
      },
      annotations: { [PEER_CERTIFICATE_SECONDS_ANNOTATION]: String(certificateSeconds(options)) },
    },
    spec: {
      owners: [{ kind: "User", name: peerUsername(consumer.clusterId) }],
      // Beyond namespace admin: what the consumer's multi-cluster services controller writes in
      // the replica namespaces (this tenant's namespaces, and no others).
      users: [{ name: peerUsername(consumer.clusterId), permissions: MCS_PEER_PERMISSIONS }],
      namespaceQuota: options.namespaceQuota,
      quota: { hard: { ...options.resources } },
    },
  };
}

function certificateSeconds(options: Pick<PeerOptions, "expirationSeconds">): number {
  return options.expirationSeconds ?? PEER_CERTIFICATE_SECONDS;
}

function peerLabels(consumer: ClusterIdentity): Record<string, string> {
  return {
    [PEER_CLUSTER_ID_LABEL]: consumer.clusterId,
    [PEER_CLUSTER_NAME_LABEL]: consumer.clusterName,
    "app.kubernetes.io/managed-by": "tenantry",
  };
}

/** What the peer user needs to renew its certificate, as a kubelet has: create and read CSRs. */
function peerRenewalRbac(consumer: ClusterIdentity): [V1ClusterRole, V1ClusterRoleBinding] {
  const name = peerRoleName(consumer.clusterName);
  const labels = peerLabels(consumer);
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name, labels },
      rules: [
        {
          apiGroups: ["certificates.k8s.io"],
          resources: ["certificatesigningrequests"],
          verbs: ["create", "get"],
        },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name, labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
      subjects: [
        { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: peerUsername(consumer.clusterId) },
      ],
    },
  ];
}

function peerRbac(consumer: ClusterIdentity, namespace: string): [V1Role, V1RoleBinding] {
  const name = peerRoleName(consumer.clusterName);
  const labels = peerLabels(consumer);
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name, namespace, labels },
      rules: [
        {
          apiGroups: [""],
          resources: ["configmaps"],
          verbs: ["get"],
          resourceNames: [CLUSTER_IDENTITY_CONFIGMAP],
        },
        // The gateways' public facts, and the one ConfigMap the two clusters exchange them in.
        ...peerNetworkRules(consumer.clusterName),
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name, namespace, labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
      subjects: [
        { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: peerUsername(consumer.clusterId) },
      ],
    },
  ];
}

/** A kubeconfig for the provider: its server and CA from the admin kubeconfig, the peer's certificate. */
export function peerKubeconfig(
  provider: ClusterClient,
  identity: ClusterIdentity,
  credentials: UserCredentials,
): string {
  const cluster = provider.kubeConfig.getCurrentCluster()!;
  let caData = cluster.caData;
  if (!caData && cluster.caFile) {
    // loadFromFile resolved the path; embed the CA so the Secret stands alone.
    caData = readFileSync(cluster.caFile).toString("base64");
  }
  const b64 = (text: string) => Buffer.from(text).toString("base64");
  const name = identity.clusterName;
  return kubeconfigYaml([
    {
      name,
      cluster: {
        name,
        server: cluster.server,
        ...(caData ? { caData } : {}),
        ...(cluster.tlsServerName ? { tlsServerName: cluster.tlsServerName } : {}),
        ...(cluster.skipTLSVerify ? { insecureSkipTlsVerify: true } : {}),
      },
      user: { name: `${name}-peer`, certData: b64(credentials.certPem), keyData: b64(credentials.keyPem) },
    },
  ]);
}

async function waitFor<T>(
  what: () => Promise<{ done: boolean; value: T; detail: string }>,
  timeoutMs: number,
): Promise<{ done: boolean; value: T; detail: string }> {
  let last: { done: boolean; value: T; detail: string } | undefined;
  const done = await pollUntil(
    async () => {
      last = await what();
      return last.done ? last : undefined;
    },
    { timeoutMs, intervalMs: 100, maxIntervalMs: 1000 },
  );
  return done ?? last!;
}

function readyOf(object: { metadata?: { generation?: number }; status?: { conditions?: unknown[] } }): {
  done: boolean;
  detail: string;
} {
  const ready = findCondition(object.status?.conditions as Condition[] | undefined, "Ready");
  const current = ready && (ready.observedGeneration ?? 0) >= (object.metadata?.generation ?? 0);
  return {
    done: Boolean(current && ready.status === "True"),
    detail: ready ? `Ready=${ready.status} ${ready.reason}: ${ready.message}` : "no Ready condition yet",
  };
}

type Progress = (side: Side, cluster: string, message: string) => void;

/** Everything a peering creates, worked out from both clusters' identities before anything is. */
interface PeeringPlan {
  options: PeerOptions;
  consumer: ClusterClient;
  provider: ClusterClient;
  namespace: string;
  timeoutMs: number;
  progress: Progress;
  ids: { consumer: ClusterIdentity; provider: ClusterIdentity };
  peeringName: string;
  username: string;
  secretName: string;
  tenant: Tenant;
  /** The tenant and its user's least privileges, in the order they are created. */
  providerObjects: KubernetesObject[];
}

/** Creates an object in one cluster and remembers it, for the rollback. */
type Create = <T extends KubernetesObject>(side: Side, client: ClusterClient, object: T) => Promise<T>;

/**
 * Peers `consumer` with `provider`. Everything is checked before anything is created; on any
 * failure whatever was created is deleted again, and the error names the cluster that failed.
 */
export async function peerClusters(options: PeerOptions): Promise<PeerResult> {
  const { timings, lap } = stopwatch();
  checkPeerOptions(options);
  const plan = await planPeering(options);
  lap("identities");
  await checkNothingExistsYet(plan);
  lap("checks");

  const created: Created[] = [];
  const create = recordingCreate(created, plan.progress);
  try {
    await createProviderObjects(plan, create);
    lap("providerObjects");
    await waitForPeerTenant(plan);
    lap("tenantReady");
    const credentials = await signPeerCertificate(plan);
    lap("certificate");
    const peering = await createConsumerObjects(plan, credentials, create);
    lap("consumerObjects");
    await waitForPeering(plan, peering);
    lap("peeringReady");
    return {
      consumer: plan.ids.consumer,
      provider: plan.ids.provider,
      peering: plan.peeringName,
      virtualNode: virtualNodeName(plan.peeringName),
      tenant: plan.tenant.metadata!.name!,
      username: plan.username,
      ...(credentials.expiresAt ? { certificateExpiresAt: credentials.expiresAt } : {}),
      timings,
    };
  } catch (err) {
    throw new Error(`${errorMessage(err)}; ${await rollBack(created)}`, { cause: err });
  }
}

/** Milliseconds per step: each lap is the time since the one before, or since the start. */
function stopwatch(): { timings: Record<string, number>; lap: (name: string) => void } {
  const timings: Record<string, number> = {};
  let mark = Date.now();
  const lap = (name: string) => {
    const now = Date.now();
    timings[name] = now - mark;
    mark = now;
  };
  return { timings, lap };
}

/** Refuses a namespace quota or a certificate lifetime the provider would not grant. */
function checkPeerOptions(options: PeerOptions): void {
  if (!Number.isInteger(options.namespaceQuota) || options.namespaceQuota < 1) {
    throw new UserError(
      `namespace quota must be a whole number of at least 1, got ${options.namespaceQuota}`,
    );
  }

  const seconds = certificateSeconds(options);
  if (!Number.isInteger(seconds) || seconds < MIN_EXPIRATION_SECONDS || seconds > PEER_CERTIFICATE_SECONDS) {
    throw new UserError(
      `certificate expirationSeconds must be a whole number from ${MIN_EXPIRATION_SECONDS} to ${PEER_CERTIFICATE_SECONDS}, got ${seconds}`,
    );
  }
}

/** Reads both clusters' identities and names everything the peering will create. */
async function planPeering(options: PeerOptions): Promise<PeeringPlan> {
  const { consumer, provider } = options;
  const namespace = options.namespace ?? DEFAULT_NAMESPACE;
  const progress = options.onProgress ?? (() => {});
  const ids = await identities(consumer, provider, namespace);
  const tenant = peerTenant(ids.consumer, options);
  const [role, binding] = peerRbac(ids.consumer, namespace);
  const [renewalRole, renewalBinding] = peerRenewalRbac(ids.consumer);
  progress("consumer", consumer.name, `cluster ${ids.consumer.clusterName} (${ids.consumer.clusterId})`);
  progress("provider", provider.name, `cluster ${ids.provider.clusterName} (${ids.provider.clusterId})`);
  return {
    options,
    consumer,
    provider,
    namespace,
    timeoutMs: options.timeoutMs ?? 60_000,
    progress,
    ids,
    peeringName: ids.provider.clusterName,
    username: peerUsername(ids.consumer.clusterId),
    secretName: peerSecretName(ids.provider.clusterName),
    tenant,
    providerObjects: [
      tenant,
      role,
      binding,
      renewalRole,
      renewalBinding,
      exchangeConfigMap(ids.consumer.clusterName, namespace, peerLabels(ids.consumer)),
    ],
  };
}

/** Runs one call in a cluster; a failure that is not already a peering's error is named for that cluster. */
async function inCluster<T>(
  side: Side,
  client: ClusterClient,
  what: string,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof PeeringError || err instanceof UserError) throw err;
    const code = statusCode(err);
    const hint =
      code === 404 && /Peering/.test(what)
        ? " (is tenantry, with the Peering resource, installed there?)"
        : "";
    throw new PeeringError(side, client.name, `${what}: ${describeError(err)}${hint}`);
  }
}

/** Preconditions: nothing exists yet on either side. */
async function checkNothingExistsYet(plan: PeeringPlan): Promise<void> {
  const { consumer, provider, namespace, peeringName } = plan;
  const peerings = await inCluster(
    "consumer",
    consumer,
    "listing Peerings",
    async () => (await consumer.objects.list<Peering>(TENANTS_API_VERSION, "Peering")).items,
  );
  const existing = peerings.find(
    (p) => p.metadata?.name === peeringName || p.spec.remoteClusterId === plan.ids.provider.clusterId,
  );
  if (existing) {
    throw new UserError(
      `consumer cluster "${consumer.name}" already peers with "${plan.ids.provider.clusterName}" (Peering ${existing.metadata!.name}): run tenantry unpeer first`,
    );
  }
  for (const [side, client, object] of [
    ...plan.providerObjects.map((object) => ["provider", provider, object]),
    [
      "consumer",
      consumer,
      { apiVersion: "v1", kind: "Secret", metadata: { name: plan.secretName, namespace } },
    ],
    [
      "consumer",
      consumer,
      { apiVersion: "v1", kind: "Node", metadata: { name: virtualNodeName(peeringName) } },
    ],
  ] as [Side, ClusterClient, KubernetesObject][]) {
    if (await inCluster(side, client, `reading ${describeObject(object)}`, () => exists(client, object))) {
      throw new UserError(
        `${side} cluster "${client.name}" already has ${describeObject(object)}: an earlier peering was not removed; run tenantry unpeer first`,
      );
    }
  }
}

/** A `create` that remembers each object it creates in `created`, for the rollback, and reports it. */
function recordingCreate(created: Created[], progress: Progress): Create {
  return async <T extends KubernetesObject>(side: Side, client: ClusterClient, object: T): Promise<T> => {
    const result = await inCluster(side, client, `creating ${describeObject(object)}`, () =>
      client.objects.create(object),
    );
    created.push({ side, client, object });
    progress(side, client.name, `created ${describeObject(object)}`);
    return result as T;
  };
}

/** The consumer's identity in the provider: its tenant, and its user's least privileges. */
async function createProviderObjects(
  { provider, providerObjects }: PeeringPlan,
  create: Create,
): Promise<void> {
  for (const object of providerObjects) await create("provider", provider, object);
}

/** Waits for an object's current Ready condition to be True; refuses one that is not by the timeout. */
async function waitUntilReady(
  side: Side,
  client: ClusterClient,
  object: KubernetesObject,
  label: string,
  timeoutMs: number,
): Promise<void> {
  const ready = await inCluster(side, client, `reading ${label}`, () =>
    waitFor(async () => {
      const current = (await client.objects.read(header(object))) as Parameters<typeof readyOf>[0];
      return { ...readyOf(current), value: current };
    }, timeoutMs),
  );
  if (!ready.done) {
    throw new PeeringError(
      side,
      client.name,
      `${label} not Ready within ${timeoutMs / 1000}s (${ready.detail})${ready.value.status?.conditions ? "" : ": is tenantry running there?"}`,
    );
  }
}

async function waitForPeerTenant({ provider, tenant, timeoutMs, progress }: PeeringPlan): Promise<void> {
  // The provider's tenant controller binds the owner to namespace creation: wait until it has.
  await waitUntilReady("provider", provider, tenant, `Tenant ${tenant.metadata!.name}`, timeoutMs);
  progress("provider", provider.name, `Tenant ${tenant.metadata!.name} is Ready`);
}

/** The provider signs a client certificate for the consumer's peer user. */
async function signPeerCertificate({
  provider,
  username,
  options,
  progress,
}: PeeringPlan): Promise<UserCredentials> {
  const credentials = await inCluster("provider", provider, `signing a certificate for ${username}`, () =>
    requestUserCertificate(provider.kubeConfig, {
      username,
      expirationSeconds: certificateSeconds(options),
    }),
  );
  progress("provider", provider.name, `signed a client certificate for ${username}`);
  return credentials;
}

/** The consumer's Peering, then the Secret with its kubeconfig for the provider, owned by the Peering. */
async function createConsumerObjects(
  plan: PeeringPlan,
  credentials: UserCredentials,
  create: Create,
): Promise<Peering> {
  const { consumer, provider, namespace, ids, peeringName, secretName, options } = plan;
  const peering = await create<Peering>("consumer", consumer, {
    apiVersion: TENANTS_API_VERSION,
    kind: "Peering",
    metadata: { name: peeringName },
    spec: {
      remoteClusterId: ids.provider.clusterId,
      remoteClusterName: ids.provider.clusterName,
      labels: ids.provider.labels,
      kubeconfigSecretRef: { name: secretName },
      namespaceQuota: options.namespaceQuota,
      resources: { ...options.resources },
    },
  });
  const secret: V1Secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: secretName,
      namespace,
      labels: { [PEERING_LABEL]: peeringName, "app.kubernetes.io/managed-by": "tenantry" },
      annotations: { [PEER_CERTIFICATE_SECONDS_ANNOTATION]: String(certificateSeconds(options)) },
      ownerReferences: [
        {
          apiVersion: TENANTS_API_VERSION,
          kind: "Peering",
          name: peeringName,
          uid: peering.metadata!.uid!,
        },
      ],
    },
    type: "Opaque",
    stringData: { [KUBECONFIG_KEY]: peerKubeconfig(provider, ids.provider, credentials) },
  };
  await create("consumer", consumer, secret);
  return peering;
}

async function waitForPeering(
  { consumer, peeringName, timeoutMs, progress }: PeeringPlan,
  peering: Peering,
): Promise<void> {
  await waitUntilReady("consumer", consumer, peering, `Peering ${peeringName}`, timeoutMs);
  progress(
    "consumer",
    consumer.name,
    `Peering ${peeringName} is Ready, virtual node ${virtualNodeName(peeringName)}`,
  );
}

/** Deletes what was created, newest first; says what was removed and what could not be. */
async function rollBack(created: Created[]): Promise<string> {
  if (created.length === 0) return "nothing was created";
  const removed: string[] = [];
  const failed: string[] = [];
  for (const { side, client, object } of [...created].reverse()) {
    try {
      await deleteObject(client, object);
      removed.push(`${describeObject(object)} in ${side} "${client.name}"`);
    } catch (err) {
      failed.push(`${describeObject(object)} in ${side} "${client.name}" (${describeError(err)})`);
    }
  }
  return [
    removed.length ? `rolled back: ${removed.join(", ")}` : "",
    failed.length ? `could NOT roll back: ${failed.join(", ")}` : "",
  ]
    .filter(Boolean)
    .join("; ");
}

export interface UnpeerOptions {
  consumer: ClusterClient;
  provider: ClusterClient;
  namespace?: string;
  /** How long to wait for the virtual node and the provider's tenant to be gone. */
  timeoutMs?: number;
  onProgress?: (side: Side, cluster: string, message: string) => void;
}

export interface UnpeerResult {
  removed: string[];
}

/**
 * Removes a peering on both sides: in the consumer the Peering (its virtual node and Secret go
 * with it) and the Secret; in the provider the tenant (its namespaces go by garbage collection),
 * the Role and RoleBinding, and the ClusterRole and ClusterRoleBinding for renewals. Each side is cleaned even when the other fails; the error names
 * every cluster that failed.
 */
export async function unpeerClusters(options: UnpeerOptions): Promise<UnpeerResult> {
  const { consumer, provider } = options;
  const namespace = options.namespace ?? DEFAULT_NAMESPACE;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const progress = options.onProgress ?? (() => {});
  const consumerId = await readClusterIdentity(consumer, namespace, "consumer");
  let providerId: ClusterIdentity | undefined;
  const failures: string[] = [];
  try {
    providerId = await readClusterIdentity(provider, namespace, "provider");
  } catch (err) {
    failures.push(errorMessage(err));
  }
  if (providerId && providerId.clusterId === consumerId.clusterId) {
    throw new UserError(
      `consumer "${consumer.name}" and provider "${provider.name}" are the same cluster: there is no peering`,
    );
  }
  const removed: string[] = [];

  // Consumer side.
  try {
    const peerings = (await consumer.objects.list<Peering>(TENANTS_API_VERSION, "Peering")).items;
    const peering = peerings.find((p) =>
      providerId ? p.spec.remoteClusterId === providerId.clusterId : p.metadata?.name === provider.name,
    );
    if (peering) {
      const name = peering.metadata!.name!;
      await deleteObject(consumer, { apiVersion: TENANTS_API_VERSION, kind: "Peering", metadata: { name } });
      removed.push(`Peering ${name} in consumer "${consumer.name}"`);
      progress("consumer", consumer.name, `deleted Peering ${name}`);
      const secret = {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: peering.spec.kubeconfigSecretRef.name, namespace },
      };
      if (await deleteObject(consumer, secret))
        removed.push(`${describeObject(secret)} in consumer "${consumer.name}"`);
      const nodeName = virtualNodeName(peering.spec.remoteClusterName);
      const gone = await waitFor(async () => {
        try {
          const node: V1Node = await consumer.core.readNode({ name: nodeName });
          return {
            done: false,
            value: undefined,
            detail: node.metadata?.deletionTimestamp ? "being deleted" : "still there",
          };
        } catch (err) {
          if (isNotFound(err)) return { done: true, value: undefined, detail: "" };
          throw err;
        }
      }, timeoutMs);
      if (!gone.done)
        failures.push(
          `consumer cluster "${consumer.name}": virtual node ${nodeName} ${gone.detail} after ${timeoutMs / 1000}s`,
        );
      else {
        removed.push(`Node ${nodeName} in consumer "${consumer.name}"`);
        progress("consumer", consumer.name, `virtual node ${nodeName} is gone`);
      }
    } else {
      progress("consumer", consumer.name, "no Peering for this provider");
    }
  } catch (err) {
    failures.push(`consumer cluster "${consumer.name}": ${describeError(err)}`);
  }

  // Provider side.
  if (providerId || failures.length === 0) {
    try {
      const tenant = {
        apiVersion: TENANTS_API_VERSION,
        kind: "Tenant",
        metadata: { name: peerTenantName(consumerId.clusterName) },
      };
      const [role, binding] = peerRbac(consumerId, namespace);
      const [renewalRole, renewalBinding] = peerRenewalRbac(consumerId);
      const exchange = exchangeConfigMap(consumerId.clusterName, namespace, {});
      for (const object of [
        exchange,
        renewalBinding,
        renewalRole,
        binding,
        role,
        tenant,
      ] as KubernetesObject[]) {
        if (await deleteObject(provider, object)) {
          removed.push(`${describeObject(object)} in provider "${provider.name}"`);
          progress("provider", provider.name, `deleted ${describeObject(object)}`);
        }
      }
      const gone = await waitFor(
        async () => ({ done: !(await exists(provider, tenant)), value: undefined, detail: "" }),
        timeoutMs,
      );
      if (!gone.done)
        failures.push(
          `provider cluster "${provider.name}": Tenant ${tenant.metadata.name} still there after ${timeoutMs / 1000}s`,
        );
    } catch (err) {
      failures.push(`provider cluster "${provider.name}": ${describeError(err)}`);
    }
  }

  if (failures.length) {
    throw new Error(`${failures.join("; ")}${removed.length ? `; removed: ${removed.join(", ")}` : ""}`);
  }
  if (removed.length === 0) {
    throw new UserError(`no peering between consumer "${consumer.name}" and provider "${provider.name}"`);
  }
  return { removed };
}

export interface PeeringSummary {
  name: string;
  remoteClusterId: string;
  labels: Record<string, string>;
  ready: string;
  reason: string;
  message: string;
  healthy: string;
  capacity: Record<string, string | number>;
  lastHeartbeat?: string;
  virtualNode?: string;
  credentialsExpireAt?: string;
}

/** Every Peering of a consumer cluster, as `tenantry peer status` shows them. */
export async function peeringSummaries(consumer: ClusterClient): Promise<PeeringSummary[]> {
  let items: Peering[];
  try {
    items = (await consumer.objects.list<Peering>(TENANTS_API_VERSION, "Peering")).items;
  } catch (err) {
    throw new PeeringError("consumer", consumer.name, `listing Peerings: ${describeError(err)}`);
  }
  return items
    .map((p) => {
      const conditions = p.status?.conditions as Condition[] | undefined;
      const ready = findCondition(conditions, "Ready");
      return {
        name: p.metadata!.name!,
        remoteClusterId: p.spec.remoteClusterId,
        labels: p.spec.labels ?? {},
        ready: ready?.status ?? "Unknown",
        reason: ready?.reason ?? "",
        message: ready?.message ?? "",
        healthy: findCondition(conditions, "Healthy")?.status ?? "Unknown",
        capacity: p.spec.resources,
        ...(p.status?.lastHeartbeat ? { lastHeartbeat: String(p.status.lastHeartbeat) } : {}),
        ...(p.status?.virtualNode ? { virtualNode: p.status.virtualNode } : {}),
        ...(p.status?.credentialsExpireAt
          ? { credentialsExpireAt: String(p.status.credentialsExpireAt) }
          : {}),
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}
