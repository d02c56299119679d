import { parse, stringify } from "yaml";

/** A cluster entry of a kubeconfig; `caData` is base64, as kubeconfigs carry it. */
export interface KubeconfigCluster {
  name: string;
  server: string;
  caData?: string;
  /** The CA in a file on this machine instead of in the kubeconfig. */
  caFile?: string;
  tlsServerName?: string;
  insecureSkipTlsVerify?: boolean;
}

/** A user entry; certificate and key data are base64. */
export interface KubeconfigUser {
  name: string;
  certData?: string;
  keyData?: string;
  /** A certificate kept in a file on this machine instead of in the kubeconfig. */
  certFile?: string;
  /** A key kept in a file on this machine instead of in the kubeconfig. */
  keyFile?: string;
  token?: string;
  username?: string;
  password?: string;
}

export interface KubeconfigContext {
  name: string;
  cluster: KubeconfigCluster;
  user: KubeconfigUser;
  namespace?: string;
}

/**
 * The kubeconfig writer of tenantry (and its local clusters): one context per entry; clusters and
 * users shared by several contexts are written once. The first context is the current one.
 * Credentials are embedded unless an entry names a file.
 */
export function kubeconfigYaml(
  contexts: KubeconfigContext[],
  extensions: { name: string; extension: unknown }[] = [],
): string {
  const clusters = new Map(contexts.map((c) => [c.cluster.name, c.cluster]));
  const users = new Map(contexts.map((c) => [c.user.name, c.user]));
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [...clusters.values()].map((cluster) => ({
      name: cluster.name,
      cluster: {
        server: cluster.server,
        ...(cluster.caData ? { "certificate-authority-data": cluster.caData } : {}),
        ...(cluster.caFile ? { "certificate-authority": cluster.caFile } : {}),
        ...(cluster.tlsServerName ? { "tls-server-name": cluster.tlsServerName } : {}),
        ...(cluster.insecureSkipTlsVerify ? { "insecure-skip-tls-verify": true } : {}),
      },
    })),
    users: [...users.values()].map(userEntry),
    contexts: contexts.map((c) => ({
      name: c.name,
      context: {
        cluster: c.cluster.name,
        user: c.user.name,
        ...(c.namespace ? { namespace: c.namespace } : {}),
      },
    })),
    ...(contexts[0] ? { "current-context": contexts[0].name } : {}),
    ...(extensions.length ? { extensions } : {}),
  });
}

function userEntry(user: KubeconfigUser) {
  return {
    name: user.name,
    user: {
      ...(user.certData ? { "client-certificate-data": user.certData } : {}),
      ...(user.certFile ? { "client-certificate": user.certFile } : {}),
      ...(user.keyData ? { "client-key-data": user.keyData } : {}),
      ...(user.keyFile ? { "client-key": user.keyFile } : {}),
      ...(user.token ? { token: user.token } : {}),
      ...(user.username ? { username: user.username, password: user.password } : {}),
    },
  };
}

/**
 * A kubeconfig of users only: kube-apiserver's WebhookAdmissionConfiguration picks the user whose
 * name is the webhook's host (`*` for every host) and uses its credentials as its client.
 */
export function usersOnlyKubeconfigYaml(users: KubeconfigUser[]): string {
  return stringify({ apiVersion: "v1", kind: "Config", users: users.map(userEntry) });
}

interface KubeconfigDocument {
  clusters?: { name: string; cluster: unknown }[];
  users?: { name: string; user: unknown }[];
  contexts?: { name: string; context: { cluster: string; user: string; namespace?: string } }[];
  "current-context"?: string;
}

/**
 * One kubeconfig with the current context of each given kubeconfig, under the name given (cluster
 * and context `name`, user `<name>/<user>`), their cluster and user entries copied as they are
 * (whatever credentials they use). The first is the current context.
 */
export function mergedKubeconfigYaml(entries: { name: string; kubeconfig: string; user: string }[]): string {
  const merged = { clusters: [] as unknown[], users: [] as unknown[], contexts: [] as unknown[] };
  for (const { name, kubeconfig, user } of entries) {
    const doc = parse(kubeconfig) as KubeconfigDocument;
    const context = doc.contexts?.find((c) => c.name === doc["current-context"]) ?? doc.contexts?.[0];
    const clusterSpec = doc.clusters?.find((c) => c.name === context?.context.cluster)?.cluster;
    const userSpec = doc.users?.find((u) => u.name === context?.context.user)?.user;
    if (!context || !clusterSpec || !userSpec) {
      throw new Error(`the kubeconfig of ${name} has no current context with its cluster and user`);
    }
    merged.clusters.push({ name, cluster: clusterSpec });
    merged.users.push({ name: `${name}/${user}`, user: userSpec });
    merged.contexts.push({ name, context: { cluster: name, user: `${name}/${user}` } });
  }
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    ...merged,
    ...(entries[0] ? { "current-context": entries[0].name } : {}),
  });
}
