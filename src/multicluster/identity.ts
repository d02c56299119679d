import { randomUUID } from "node:crypto";
import type { V1ConfigMap } from "@kubernetes/client-node";
import { UserError } from "../common/index.js";
import {
  applyObject,
  type ClusterClient,
  describeError,
  isAlreadyExists,
  isNotFound,
} from "../kube/index.js";
import { MAX_CLUSTER_NAME } from "./api/peering.js";

/** The ConfigMap, in tenantry's namespace, that says which cluster this is. */
export const CLUSTER_IDENTITY_CONFIGMAP = "tenantry-cluster-identity";

/** Who a cluster is, as peers see it. */
export interface ClusterIdentity {
  /** Generated once, the first time tenantry starts on the cluster, and never changed. */
  clusterId: string;
  /** Chosen by the cluster's administrator; names the virtual node and tenant a peer gets. */
  clusterName: string;
  /** Chosen by the cluster's administrator: region, provider, security policy, hardware… */
  labels: Record<string, string>;
}

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

export function checkClusterName(name: string): void {
  if (!NAME.test(name) || name.length > MAX_CLUSTER_NAME) {
    throw new UserError(
      `cluster name "${name}" must be a DNS label of at most ${MAX_CLUSTER_NAME} characters (lowercase letters, digits, "-")`,
    );
  }
}

export function checkClusterLabels(labels: Record<string, string>): void {
  for (const [key, value] of Object.entries(labels)) {
    const name = key.includes("/") ? key.slice(key.indexOf("/") + 1) : key;
    if (!LABEL_KEY.test(key) || name.length > 63 || key.length > 317) {
      throw new UserError(`cluster label key "${key}" is not a valid label key`);
    }
    if (!LABEL_VALUE.test(value) || value.length > 63) {
      throw new UserError(`cluster label ${key}: value "${value}" is not a valid label value`);
    }
  }
}

/** Reads an identity ConfigMap's data; undefined when it is not one. */
export function parseClusterIdentity(configMap: V1ConfigMap): ClusterIdentity | undefined {
  const data = configMap.data ?? {};
  if (!data.clusterId || !data.clusterName) return undefined;
  let labels: Record<string, string> = {};
  try {
    const parsed = JSON.parse(data.labels ?? "{}") as unknown;
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
      labels = Object.fromEntries(
        Object.entries(parsed as Record<string, unknown>).filter(
          (entry): entry is [string, string] => typeof entry[1] === "string",
        ),
      );
    }
  } catch {
    return undefined;
  }
  return { clusterId: data.clusterId, clusterName: data.clusterName, labels };
}

function identityConfigMap(namespace: string, identity: ClusterIdentity): V1ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: CLUSTER_IDENTITY_CONFIGMAP,
      namespace,
      labels: { "app.kubernetes.io/managed-by": "tenantry", "app.kubernetes.io/part-of": "tenantry" },
    },
    data: {
      clusterId: identity.clusterId,
      clusterName: identity.clusterName,
      labels: JSON.stringify(identity.labels, Object.keys(identity.labels).sort()),
    },
  };
}

/**
 * Makes sure the cluster has its identity: the id is generated the first time and kept forever
 * after; the name and labels follow what the administrator passes (labels left undefined keep
 * the ones recorded).
 */
export async function ensureClusterIdentity(
  client: ClusterClient,
  options: { namespace: string; clusterName: string; labels?: Record<string, string> },
): Promise<ClusterIdentity> {
  checkClusterName(options.clusterName);
  if (options.labels) checkClusterLabels(options.labels);
  try {
    await client.core.createNamespace({ body: { metadata: { name: options.namespace } } });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  let current: ClusterIdentity | undefined;
  try {
    const existing = await client.core.readNamespacedConfigMap({
      name: CLUSTER_IDENTITY_CONFIGMAP,
      namespace: options.namespace,
    });
    current = parseClusterIdentity(existing);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  const identity: ClusterIdentity = {
    clusterId: current?.clusterId ?? randomUUID(),
    clusterName: options.clusterName,
    labels: options.labels ?? current?.labels ?? {},
  };
  if (!current) {
    // create, not apply: two replicas starting at once must not both pick an id.
    try {
      await client.core.createNamespacedConfigMap({
        namespace: options.namespace,
        body: identityConfigMap(options.namespace, identity),
      });
      return identity;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      return ensureClusterIdentity(client, options);
    }
  }
  await applyObject(client, identityConfigMap(options.namespace, identity));
  return identity;
}

/** A cluster's identity as an administrator of it reads it; a UserError names the cluster when absent. */
export async function readClusterIdentity(
  client: ClusterClient,
  namespace: string,
  role: string,
): Promise<ClusterIdentity> {
  let configMap: V1ConfigMap;
  try {
    configMap = await client.core.readNamespacedConfigMap({ name: CLUSTER_IDENTITY_CONFIGMAP, namespace });
  } catch (err) {
    if (isNotFound(err)) {
      throw new UserError(
        `${role} cluster "${client.name}" (${client.server}) has no ConfigMap ${namespace}/${CLUSTER_IDENTITY_CONFIGMAP}: tenantry has never run there; start it first (tenantry run)`,
      );
    }
    throw new UserError(
      `${role} cluster "${client.name}" (${client.server}): cannot read its identity: ${describeError(err)}`,
      1,
    );
  }
  const identity = parseClusterIdentity(configMap);
  if (!identity) {
    throw new UserError(
      `${role} cluster "${client.name}": ConfigMap ${namespace}/${CLUSTER_IDENTITY_CONFIGMAP} lacks clusterId or clusterName`,
    );
  }
  return identity;
}
