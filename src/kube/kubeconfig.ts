import { stringify } from "yaml";

/** A cluster entry of a kubeconfig; `caData` is base64, as kubeconfigs carry it. */
export interface KubeconfigCluster {
  name: string;
  server: string;
  caData?: string;
  tlsServerName?: string;
  insecureSkipTlsVerify?: boolean;
}

/** A user entry; certificate and key data are base64. */
export interface KubeconfigUser {
  name: string;
  certData?: string;
  keyData?: string;
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
 * A self-contained kubeconfig (every credential embedded) with one context per entry; clusters and
 * users shared by several contexts are written once. The first context is the current one.
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
        ...(cluster.tlsServerName ? { "tls-server-name": cluster.tlsServerName } : {}),
        ...(cluster.insecureSkipTlsVerify ? { "insecure-skip-tls-verify": true } : {}),
      },
    })),
    users: [...users.values()].map((user) => ({
      name: user.name,
      user: {
        ...(user.certData ? { "client-certificate-data": user.certData } : {}),
        ...(user.keyData ? { "client-key-data": user.keyData } : {}),
        ...(user.keyFile ? { "client-key": user.keyFile } : {}),
        ...(user.token ? { token: user.token } : {}),
        ...(user.username ? { username: user.username, password: user.password } : {}),
      },
    })),
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
