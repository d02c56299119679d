import { X509Certificate } from "node:crypto";
import { request as httpsRequest, type RequestOptions } from "node:https";
import { KubeConfig } from "@kubernetes/client-node";
import { ClusterClient, describeError, isNotFound } from "../kube/index.js";
import { CLUSTER_IDENTITY_CONFIGMAP, parseClusterIdentity } from "./identity.js";

/** Credentials for a provider, read from the peering's Secret. */
export interface PeerCredentials {
  kubeConfig: KubeConfig;
  client: ClusterClient;
  server: string;
  /** Who the provider knows this cluster as (the certificate's CN). */
  username?: string;
  expiresAt?: Date;
}

/** Loads a kubeconfig for a provider; throws a one-line error saying what is wrong with it. */
export function loadPeerCredentials(peering: string, kubeconfig: string): PeerCredentials {
  const kubeConfig = new KubeConfig();
  try {
    kubeConfig.loadFromString(kubeconfig);
  } catch (err) {
    throw new Error(`the kubeconfig does not parse: ${describeError(err)}`);
  }
  const cluster = kubeConfig.getCurrentCluster();
  const user = kubeConfig.getCurrentUser();
  if (!cluster?.server) throw new Error("the kubeconfig has no current cluster with a server");
  if (!user) throw new Error("the kubeconfig has no current user");
  let username: string | undefined;
  let expiresAt: Date | undefined;
  if (user.certData) {
    try {
      const cert = new X509Certificate(Buffer.from(user.certData, "base64"));
      username = /(?:^|\n)CN=([^\n]*)/.exec(cert.subject)?.[1];
      expiresAt = new Date(cert.validTo);
    } catch (err) {
      throw new Error(`the kubeconfig's client certificate does not parse: ${describeError(err)}`);
    }
  }
  return {
    kubeConfig,
    client: new ClusterClient(`peer-${peering}`, kubeConfig),
    server: cluster.server,
    ...(username ? { username } : {}),
    ...(expiresAt ? { expiresAt } : {}),
  };
}

export interface ProbeResult {
  ok: boolean;
  /** What answered, or why nothing did. */
  message: string;
}

/**
 * GET /readyz on the provider with the peer's own credentials (every authenticated client may
 * read it), on a fresh connection so a dead server is noticed at once.
 */
export async function probeReadyz(kubeConfig: KubeConfig, timeoutMs: number): Promise<ProbeResult> {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) return { ok: false, message: "no server in the kubeconfig" };
  const url = new URL("/readyz", server.replace(/\/+$/, "/"));
  const options: RequestOptions & { headers?: Record<string, string> } = { headers: {} };
  await kubeConfig.applyToHTTPSOptions(options);
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: ProbeResult) => {
      if (!settled) {
        settled = true;
        resolve(result);
      }
    };
    const req = httpsRequest(url, { ...options, method: "GET", agent: false, timeout: timeoutMs }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        if (body.length < 4096) body += chunk;
      });
      res.on("end", () => {
        const code = res.statusCode ?? 0;
        if (code === 200) finish({ ok: true, message: `${url.origin}/readyz answered ok` });
        else {
          const firstLine = body.split("\n").find((l) => l.includes("failed")) ?? body.split("\n")[0] ?? "";
          finish({
            ok: false,
            message: `${url.origin}/readyz answered HTTP ${code}: ${firstLine.trim().slice(0, 200)}`,
          });
        }
      });
      res.on("error", (err) => finish({ ok: false, message: `${url.origin}/readyz: ${describeError(err)}` }));
    });
    req.on("timeout", () => {
      req.destroy();
      finish({ ok: false, message: `${url.origin}/readyz did not answer within ${timeoutMs} ms` });
    });
    req.on("error", (err: NodeJS.ErrnoException) =>
      finish({
        ok: false,
        message: `${url.origin}/readyz: ${err.code ? `${err.code} ` : ""}${err.message}`.trim(),
      }),
    );
    req.end();
  });
}

export type IdentityCheck =
  | { ok: true; clusterId: string; clusterName: string }
  | { ok: false; reason: "IdentityMismatch" | "IdentityUnverified"; message: string };

/** Reads the provider's identity ConfigMap with the peer's credentials and compares the id. */
export async function checkRemoteIdentity(
  client: ClusterClient,
  namespace: string,
  expectedId: string,
): Promise<IdentityCheck> {
  try {
    const configMap = await client.core.readNamespacedConfigMap({
      name: CLUSTER_IDENTITY_CONFIGMAP,
      namespace,
    });
    const identity = parseClusterIdentity(configMap);
    if (!identity) {
      return {
        ok: false,
        reason: "IdentityUnverified",
        message: `the provider's ${namespace}/${CLUSTER_IDENTITY_CONFIGMAP} is malformed`,
      };
    }
    if (identity.clusterId !== expectedId) {
      return {
        ok: false,
        reason: "IdentityMismatch",
        message: `the provider answers as cluster ${identity.clusterId} ("${identity.clusterName}"), not ${expectedId}`,
      };
    }
    return { ok: true, clusterId: identity.clusterId, clusterName: identity.clusterName };
  } catch (err) {
    return {
      ok: false,
      reason: "IdentityUnverified",
      message: isNotFound(err)
        ? `the provider has no ${namespace}/${CLUSTER_IDENTITY_CONFIGMAP}`
        : `reading the provider's identity: ${describeError(err)}`,
    };
  }
}
