import { X509Certificate } from "node:crypto";
import { request as httpsRequest, type RequestOptions } from "node:https";
import { KubeConfig, type V1ConfigMap } from "@kubernetes/client-node";
import { describeError } from "../kube/index.js";
import { CLUSTER_IDENTITY_CONFIGMAP, parseClusterIdentity } from "./identity.js";

/** Key of the kubeconfig in a peering's credentials Secret. */
export const KUBECONFIG_KEY = "kubeconfig";

/** Credentials for a provider, read from the peering's Secret. */
export interface PeerCredentials {
  kubeConfig: KubeConfig;
  server: string;
  /** Who the provider knows this cluster as (the certificate's CN). */
  username?: string;
  expiresAt?: Date;
}

/** Loads a kubeconfig for a provider; throws a one-line error saying what is wrong with it. */
export function loadPeerCredentials(kubeconfig: string): PeerCredentials {
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

interface Answer {
  status: number;
  body: string;
}

/**
 * One GET on the provider with the peer's own credentials, on a fresh connection (no pool): a
 * dead server is noticed at once, and nothing stays connected to a peer between probes.
 */
async function getOnce(kubeConfig: KubeConfig, path: string, timeoutMs: number): Promise<Answer> {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) throw new Error("no server in the kubeconfig");
  const url = new URL(path.replace(/^\//, ""), server.replace(/\/*$/, "/"));
  const options: RequestOptions & { headers?: Record<string, string> } = { headers: {} };
  await kubeConfig.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { ...options, method: "GET", agent: false, timeout: timeoutMs }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        if (body.length < 65536) body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", (err: NodeJS.ErrnoException) =>
      reject(new Error(`${err.code && !err.message.includes(err.code) ? `${err.code} ` : ""}${err.message}`)),
    );
    req.end();
  });
}

/** GET /readyz on the provider (every authenticated client may read it). */
export async function probeReadyz(kubeConfig: KubeConfig, timeoutMs: number): Promise<ProbeResult> {
  const server = kubeConfig.getCurrentCluster()?.server ?? "";
  const where = `${server.replace(/\/+$/, "")}/readyz`;
  try {
    const answer = await getOnce(kubeConfig, "/readyz", timeoutMs);
    if (answer.status === 200) return { ok: true, message: `${where} answered ok` };
    const lines = answer.body.split("\n");
    const detail = (lines.find((l) => l.includes("failed")) ?? lines[0] ?? "").trim().slice(0, 200);
    return { ok: false, message: `${where} answered HTTP ${answer.status}${detail ? `: ${detail}` : ""}` };
  } catch (err) {
    return { ok: false, message: `${where}: ${describeError(err)}` };
  }
}

export type IdentityCheck =
  | { ok: true; clusterId: string; clusterName: string }
  | { ok: false; reason: "IdentityMismatch" | "IdentityUnverified"; message: string };

/** Reads the provider's identity ConfigMap with the peer's credentials and compares the id. */
export async function checkRemoteIdentity(
  kubeConfig: KubeConfig,
  namespace: string,
  expectedId: string,
  timeoutMs: number,
): Promise<IdentityCheck> {
  const what = `the provider's ${namespace}/${CLUSTER_IDENTITY_CONFIGMAP}`;
  let answer: Answer;
  try {
    answer = await getOnce(
      kubeConfig,
      `/api/v1/namespaces/${namespace}/configmaps/${CLUSTER_IDENTITY_CONFIGMAP}`,
      timeoutMs,
    );
  } catch (err) {
    return { ok: false, reason: "IdentityUnverified", message: `reading ${what}: ${describeError(err)}` };
  }
  if (answer.status !== 200) {
    let message = answer.body.slice(0, 200);
    try {
      message = (JSON.parse(answer.body) as { message?: string }).message ?? message;
    } catch {}
    return {
      ok: false,
      reason: "IdentityUnverified",
      message: `reading ${what}: HTTP ${answer.status}: ${message}`,
    };
  }
  let identity: ReturnType<typeof parseClusterIdentity>;
  try {
    identity = parseClusterIdentity(JSON.parse(answer.body) as V1ConfigMap);
  } catch {
    identity = undefined;
  }
  if (!identity) return { ok: false, reason: "IdentityUnverified", message: `${what} is malformed` };
  if (identity.clusterId !== expectedId) {
    return {
      ok: false,
      reason: "IdentityMismatch",
      message: `the provider answers as cluster ${identity.clusterId} ("${identity.clusterName}"), not ${expectedId}`,
    };
  }
  return { ok: true, clusterId: identity.clusterId, clusterName: identity.clusterName };
}
