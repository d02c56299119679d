/**
 * A registered cluster's credentials: a self-contained kubeconfig (one cluster, one user, one
 * context, certificates and keys embedded), kept in a Secret and turned into a client whose every
 * request has a deadline, so that a cluster that stops answering fails its callers instead of
 * holding them.
 */
import { readFileSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";
import { UserError } from "../common/index.js";
import { ClusterClient, describeError, kubeconfigYaml, withRequestDeadline } from "../kube/index.js";

// Moved to the shared runtime (peer clients use it too); still part of this folder's door.
export { withRequestDeadline };

/** Default deadline of one request to a registered cluster. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

const b64 = (data: Buffer | string) => Buffer.from(data).toString("base64");

function fileData(path: string | undefined, what: string): string | undefined {
  if (!path) return undefined;
  try {
    return b64(readFileSync(path));
  } catch (err) {
    throw new UserError(`the kubeconfig's ${what} ${path} cannot be read: ${describeError(err)}`);
  }
}

/**
 * The current context of a loaded kubeconfig as a self-contained kubeconfig: files it refers to
 * are read in, so the text works wherever it is stored. Credentials that run something on the
 * caller's machine (exec plugins, auth providers) cannot travel and are refused.
 */
export function standaloneKubeconfig(kc: KubeConfig, name: string): string {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster?.server) throw new UserError("the kubeconfig has no current context with a cluster server");
  if (!user) throw new UserError("the kubeconfig's current context names no user");
  if (user.exec || user.authProvider) {
    throw new UserError(
      `the kubeconfig's user "${user.name}" authenticates with ${user.exec ? "an exec plugin" : "an auth provider"}, which runs on this machine only: register a kubeconfig with a client certificate or a token`,
    );
  }
  const token = user.token;
  const caData = cluster.caData ?? fileData(cluster.caFile, "certificate-authority");
  const certData = user.certData ?? fileData(user.certFile, "client-certificate");
  const keyData = user.keyData ?? fileData(user.keyFile, "client-key");
  if (!token && !(certData && keyData) && !user.username) {
    throw new UserError(
      `the kubeconfig's user "${user.name}" has no client certificate and key, token or password`,
    );
  }
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
      user: {
        name: `${name}-admin`,
        ...(certData ? { certData } : {}),
        ...(keyData ? { keyData } : {}),
        ...(token ? { token } : {}),
        ...(user.username ? { username: user.username, password: user.password } : {}),
      },
    },
  ]);
}

/** Parses a registered cluster's kubeconfig text; throws a one-line error saying what is wrong. */
export function parseClusterKubeconfig(text: string): KubeConfig {
  const kc = new KubeConfig();
  try {
    kc.loadFromString(text);
  } catch (err) {
    throw new Error(`the kubeconfig does not parse: ${describeError(err)}`);
  }
  if (!kc.getCurrentCluster()?.server) throw new Error("the kubeconfig has no current cluster with a server");
  if (!kc.getCurrentUser()) throw new Error("the kubeconfig has no current user");
  return kc;
}

/** A client of a registered cluster from its kubeconfig text, every request bounded by `timeoutMs`. */
export function registeredClusterClient(
  name: string,
  kubeconfig: string,
  options: { timeoutMs?: number; signal?: AbortSignal } = {},
): ClusterClient {
  const client = new ClusterClient(name, parseClusterKubeconfig(kubeconfig));
  withRequestDeadline(client.kubeConfig, options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, options.signal);
  return client;
}
