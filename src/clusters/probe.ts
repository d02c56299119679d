/**
 * What the registry learns about a cluster with its registered credentials: whether it answers
 * (`/readyz`), and, less often, its version, nodes and capacity, the CA that signs its users and
 * its tenantry identity.
 */
import { X509Certificate } from "node:crypto";
import type { V1Node } from "@kubernetes/client-node";
import { VersionApi } from "@kubernetes/client-node";
import { addAmounts, toAmounts, toResourceList } from "../common/index.js";
import { readClientCa } from "../gateway/index.js";
import { type ClusterClient, describeError, isNotFound } from "../kube/index.js";
import { CLUSTER_IDENTITY_CONFIGMAP, parseClusterIdentity, probeReadyz } from "../multicluster/index.js";
import type { UserCa } from "./api/cluster.js";

/** Resources the capacity sums (a node's allocatable). */
const CAPACITY_RESOURCES = ["cpu", "memory", "pods"] as const;

export interface ClusterFacts {
  version?: string;
  nodes?: number;
  capacity?: Record<string, string>;
  userCa?: UserCa;
  clusterId?: string;
  /** What could not be read (the cluster answered, but not to everything). */
  problems: string[];
}

export function probeHealth(client: ClusterClient, timeoutMs: number) {
  return probeReadyz(client.kubeConfig, timeoutMs);
}

/** Allocatable cpu, memory and pods summed over the nodes. */
export function nodeCapacity(nodes: readonly V1Node[]): Record<string, string> {
  const amounts = addAmounts(
    ...nodes.map((node) => {
      const allocatable = node.status?.allocatable ?? node.status?.capacity ?? {};
      return toAmounts(
        Object.fromEntries(
          CAPACITY_RESOURCES.filter((r) => allocatable[r] !== undefined).map((r) => [r, allocatable[r]!]),
        ),
      );
    }),
  );
  return toResourceList(amounts);
}

export function capacityText(capacity: Record<string, string>): string {
  return Object.entries(capacity)
    .map(([name, amount]) => `${name}=${amount}`)
    .join(", ");
}

/** The CA bundle's first certificate described, and the bundle itself. */
export function describeUserCa(pem: string): UserCa {
  const first = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(pem)?.[0];
  if (!first) throw new Error("the client CA bundle holds no PEM certificate");
  const cert = new X509Certificate(first);
  return {
    subject: cert.subject.replace(/\n/g, ", "),
    notAfter: new Date(cert.validTo).toISOString().replace(/\.\d+Z$/, "Z"),
    sha256: cert.fingerprint256,
    pem,
  };
}

/** Version, nodes, capacity, user CA and identity; whatever fails is named in `problems`. */
export async function gatherFacts(client: ClusterClient, tenantryNamespace: string): Promise<ClusterFacts> {
  const facts: ClusterFacts = { problems: [] };
  const [version, nodes, ca, identity] = await Promise.allSettled([
    client.kubeConfig.makeApiClient(VersionApi).getCode(),
    client.core.listNode(),
    readClientCa(client),
    client.core
      .readNamespacedConfigMap({ name: CLUSTER_IDENTITY_CONFIGMAP, namespace: tenantryNamespace })
      .catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      }),
  ]);
  if (version.status === "fulfilled") facts.version = version.value.gitVersion;
  else facts.problems.push(`version: ${describeError(version.reason)}`);
  if (nodes.status === "fulfilled") {
    facts.nodes = nodes.value.items.length;
    facts.capacity = nodeCapacity(nodes.value.items);
  } else facts.problems.push(`nodes: ${describeError(nodes.reason)}`);
  if (ca.status === "fulfilled") {
    try {
      facts.userCa = describeUserCa(ca.value);
    } catch (err) {
      facts.problems.push(`user CA: ${describeError(err)}`);
    }
  } else facts.problems.push(`user CA: ${describeError(ca.reason)}`);
  if (identity.status === "fulfilled") {
    const parsed = identity.value ? parseClusterIdentity(identity.value) : undefined;
    if (parsed) facts.clusterId = parsed.clusterId;
  } else facts.problems.push(`identity: ${describeError(identity.reason)}`);
  return facts;
}
