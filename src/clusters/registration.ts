/**
 * Adding, labelling and removing registered clusters (what `tenantry cluster` and the embedded
 * default do). Everything is checked before anything is written; a failure after the Cluster
 * was created removes it again.
 */
import { PatchStrategy, type V1Secret, VersionApi } from "@kubernetes/client-node";
import { UserError } from "../common/index.js";
import {
  applyObject,
  type ClusterClient,
  describeError,
  ignoreNotFound,
  isAlreadyExists,
  isNotFound,
} from "../kube/index.js";
import { checkClusterLabels } from "../multicluster/index.js";
import { MANAGED_BY, MANAGED_BY_LABEL, TENANTS_API_VERSION } from "../tenants/index.js";
import {
  CLUSTER_KUBECONFIG_KEY,
  type Cluster,
  DEFAULT_CLUSTER_PROVIDER,
  MAX_REGISTERED_CLUSTER_NAME,
} from "./api/cluster.js";
import { parseClusterKubeconfig, registeredClusterClient } from "./credentials.js";
import { CLUSTER_LABEL, clusterSecretName } from "./registry.js";

export const DEFAULT_REGISTRY_NAMESPACE = "tenantry-system";
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function checkRegisteredClusterName(name: string, field = "name"): void {
  if (!NAME.test(name) || name.length > MAX_REGISTERED_CLUSTER_NAME) {
    throw new UserError(
      `${field}: cluster name "${name}" must be a DNS label of at most ${MAX_REGISTERED_CLUSTER_NAME} characters (lowercase letters, digits, "-")`,
    );
  }
}

export interface RegisterClusterOptions {
  name: string;
  /** A self-contained kubeconfig administering the cluster (see standaloneKubeconfig). */
  kubeconfig: string;
  labels?: Record<string, string>;
  provider?: string;
  description?: string;
  namespace?: string;
  /** Update an existing registration (labels given replace tenantry's; the credentials are replaced). */
  replace?: boolean;
  /** Check that the credentials reach the cluster before registering (default true). */
  checkReachable?: boolean;
}

/** GET /version with a cluster's kubeconfig: its version, or a UserError saying why not. */
export async function checkClusterReachable(
  name: string,
  kubeconfig: string,
  timeoutMs = 10_000,
): Promise<string> {
  const client = registeredClusterClient(name, kubeconfig, { timeoutMs });
  try {
    const version = await client.kubeConfig.makeApiClient(VersionApi).getCode();
    return version.gitVersion;
  } catch (err) {
    throw new UserError(
      `cluster "${name}" at ${client.server} does not answer with these credentials: ${describeError(err)} (use --skip-check to register it anyway)`,
      1,
    );
  }
}

function clusterObject(options: RegisterClusterOptions): Cluster {
  return {
    apiVersion: TENANTS_API_VERSION,
    kind: "Cluster",
    metadata: { name: options.name, labels: { ...(options.labels ?? {}) } },
    spec: {
      provider: options.provider ?? DEFAULT_CLUSTER_PROVIDER,
      ...(options.description ? { description: options.description } : {}),
      kubeconfigSecretRef: { name: clusterSecretName(options.name) },
    },
  };
}

function credentialsSecret(cluster: Cluster, namespace: string, kubeconfig: string): V1Secret {
  const name = cluster.metadata!.name!;
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: clusterSecretName(name),
      namespace,
      labels: { [CLUSTER_LABEL]: name, [MANAGED_BY_LABEL]: MANAGED_BY },
      // Removing the registration removes its credentials (once nothing holds the Cluster any more).
      ownerReferences: [
        {
          apiVersion: TENANTS_API_VERSION,
          kind: "Cluster",
          name,
          uid: cluster.metadata!.uid!,
          controller: true,
        },
      ],
    },
    type: "Opaque",
    stringData: { [CLUSTER_KUBECONFIG_KEY]: kubeconfig },
  };
}

/**
 * Registers a cluster: the Cluster object (labels, provider) and a Secret with its kubeconfig.
 * A name already registered is refused (exit code 4) unless `replace`.
 */
export async function registerCluster(
  client: ClusterClient,
  options: RegisterClusterOptions,
): Promise<Cluster> {
  const namespace = options.namespace ?? DEFAULT_REGISTRY_NAMESPACE;
  checkRegisteredClusterName(options.name);
  if (options.provider !== undefined && !NAME.test(options.provider)) {
    throw new UserError(
      `provider: "${options.provider}" must be a DNS label (lowercase letters, digits, "-")`,
    );
  }
  if (options.labels) checkClusterLabels(options.labels);
  try {
    parseClusterKubeconfig(options.kubeconfig);
  } catch (err) {
    throw new UserError(`kubeconfig: ${(err as Error).message}`);
  }
  if (options.checkReachable ?? true) await checkClusterReachable(options.name, options.kubeconfig);

  const desired = clusterObject(options);
  let cluster: Cluster;
  let created = false;
  try {
    cluster = (await client.objects.create(desired)) as Cluster;
    created = true;
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    if (!options.replace) {
      throw new UserError(
        `cluster "${options.name}" is already registered (tenantry cluster remove it first)`,
        4,
      );
    }
    cluster = await applyObject(client, desired);
  }
  try {
    await applyObject(client, credentialsSecret(cluster, namespace, options.kubeconfig));
  } catch (err) {
    if (created) await client.objects.delete(desired).catch(() => {});
    throw new Error(
      `cluster "${options.name}": storing its credentials failed: ${describeError(err)}${created ? "; the registration was removed again" : ""}`,
    );
  }
  return cluster;
}

export async function readCluster(client: ClusterClient, name: string): Promise<Cluster> {
  checkRegisteredClusterName(name);
  try {
    return (await client.objects.read({
      apiVersion: TENANTS_API_VERSION,
      kind: "Cluster",
      metadata: { name },
    })) as Cluster;
  } catch (err) {
    if (isNotFound(err)) throw new UserError(`cluster "${name}" is not registered`, 3);
    throw err;
  }
}

export async function listClusters(client: ClusterClient, labelSelector?: string): Promise<Cluster[]> {
  const list = await client.objects.list<Cluster>(
    TENANTS_API_VERSION,
    "Cluster",
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    labelSelector,
  );
  return list.items.sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
}

/**
 * Sets and removes labels of a registered cluster (a merge patch: other labels, and labels other
 * writers set meanwhile, stay). Logical clouds selecting it by label follow within seconds.
 */
export async function labelCluster(
  client: ClusterClient,
  name: string,
  change: { set?: Record<string, string>; remove?: string[] },
): Promise<Cluster> {
  checkRegisteredClusterName(name);
  if (change.set) checkClusterLabels(change.set);
  const labels: Record<string, string | null> = { ...(change.set ?? {}) };
  for (const key of change.remove ?? []) labels[key] = null;
  if (Object.keys(labels).length === 0) throw new UserError("no labels to set or remove");
  try {
    return await client.objects.patchRaw<Cluster>(
      { apiVersion: TENANTS_API_VERSION, kind: "Cluster", metadata: { name, labels } } as never,
      PatchStrategy.MergePatch,
    );
  } catch (err) {
    if (isNotFound(err)) throw new UserError(`cluster "${name}" is not registered`, 3);
    throw err;
  }
}

/**
 * Removes a registration. Logical clouds configured there are cleaned up first (their finalizer
 * holds the Cluster until then); `force` drops the finalizers and leaves whatever they created.
 */
export async function removeCluster(
  client: ClusterClient,
  name: string,
  options: { force?: boolean } = {},
): Promise<Cluster> {
  const cluster = await readCluster(client, name);
  await ignoreNotFound(client.objects.delete(cluster));
  if (options.force && cluster.metadata?.finalizers?.length) {
    await client.objects
      .patchRaw(
        { apiVersion: TENANTS_API_VERSION, kind: "Cluster", metadata: { name, finalizers: null } } as never,
        PatchStrategy.MergePatch,
      )
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
  }
  return cluster;
}
