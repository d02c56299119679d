/**
 * The users' keys, requests and certificates of a logical cloud, kept in one Secret in its
 * project's namespace (owned by the LogicalCloud), and the kubeconfigs assembled from them: one
 * context per cluster, each with that cluster's server, CA and the certificate it signed.
 */
import type { KubernetesObject, V1Secret } from "@kubernetes/client-node";
import { parseClusterKubeconfig } from "../clusters/index.js";
import { type KubeconfigCluster, kubeconfigYaml, mergedKubeconfigYaml } from "../kube/index.js";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../tenants/index.js";
import type { LogicalCloud } from "./api/logical-cloud.js";

/** On a logical cloud's credentials Secret: the LogicalCloud it belongs to. */
export const CREDENTIALS_LABEL = "tenantry.dev/logical-cloud-credentials";

export function credentialsSecretName(cloud: string): string {
  return `lc-${cloud}`;
}
export const keyEntry = (user: string) => `${user}.key`;
export const requestEntry = (user: string) => `${user}.csr`;
export const certificateEntry = (user: string, cluster: string) => `${user}.${cluster}.crt`;

/** The Secret's entries as text. */
export type CredentialData = Record<string, string>;

export function decodeSecret(secret: V1Secret | undefined): CredentialData {
  return Object.fromEntries(
    Object.entries(secret?.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]),
  );
}

export function credentialsSecret(cloud: LogicalCloud, data: CredentialData): V1Secret & KubernetesObject {
  const name = cloud.metadata!.name!;
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: credentialsSecretName(name),
      namespace: cloud.metadata!.namespace!,
      labels: {
        [CREDENTIALS_LABEL]: name.length <= 63 ? name : cloud.metadata!.uid!,
        [MANAGED_BY_LABEL]: MANAGED_BY,
      },
      ownerReferences: [
        { apiVersion: cloud.apiVersion, kind: cloud.kind, name, uid: cloud.metadata!.uid!, controller: true },
      ],
    },
    type: "Opaque",
    data: Object.fromEntries(
      Object.entries(data)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
    ),
  };
}

/** Where a cluster is, from its registered kubeconfig: server, CA and TLS settings for a user's kubeconfig. */
export interface ClusterEndpoint {
  cluster: string;
  server: string;
  caData?: string;
  tlsServerName?: string;
  insecureSkipTlsVerify?: boolean;
}

export function endpointOf(cluster: string, registeredKubeconfig: string): ClusterEndpoint {
  const current = parseClusterKubeconfig(registeredKubeconfig).getCurrentCluster()!;
  return {
    cluster,
    server: current.server,
    ...(current.caData ? { caData: current.caData } : {}),
    ...(current.tlsServerName ? { tlsServerName: current.tlsServerName } : {}),
    ...(current.skipTLSVerify ? { insecureSkipTlsVerify: true } : {}),
  };
}

const b64 = (text: string) => Buffer.from(text).toString("base64");

function clusterEntry(endpoint: ClusterEndpoint): KubeconfigCluster {
  return {
    name: endpoint.cluster,
    server: endpoint.server,
    ...(endpoint.caData ? { caData: endpoint.caData } : {}),
    ...(endpoint.tlsServerName ? { tlsServerName: endpoint.tlsServerName } : {}),
    ...(endpoint.insecureSkipTlsVerify ? { insecureSkipTlsVerify: true } : {}),
  };
}

/**
 * One user's kubeconfig over the clusters given: per cluster a cluster entry, a user entry with
 * the certificate that cluster signed (and the key, when tenantry made it), and a context named
 * after the cluster in the cloud's namespace. The first cluster's context is current.
 */
export function userKubeconfig(options: {
  user: string;
  namespace: string;
  keyPem?: string;
  clusters: { endpoint: ClusterEndpoint; certPem: string }[];
}): string {
  return kubeconfigYaml(
    options.clusters.map((c) => ({
      name: c.endpoint.cluster,
      cluster: clusterEntry(c.endpoint),
      user: {
        name: `${c.endpoint.cluster}/${options.user}`,
        certData: b64(c.certPem),
        ...(options.keyPem ? { keyData: b64(options.keyPem) } : {}),
      },
      namespace: options.namespace,
    })),
  );
}

/** A level-0 cloud's kubeconfig: each cluster's own registered credentials, one context per cluster. */
export function adminKubeconfig(clusters: { cluster: string; kubeconfig: string }[]): string {
  return mergedKubeconfigYaml(
    clusters.map((c) => ({ name: c.cluster, kubeconfig: c.kubeconfig, user: "admin" })),
  );
}
