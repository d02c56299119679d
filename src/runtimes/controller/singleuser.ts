/**
 * Runtimes of a service with `spec.jupyterhub`: JupyterHub single-user servers as KubeSpawner runs
 * them. Each start gets an API token of its own with the scopes JupyterHub's `server` role gives
 * (`access:servers!server=<user>/<server>`, `users:activity!user=<user>`), which is also the secret
 * of the server's OAuth client; the token goes into the Secret `<runtime>-jupyterhub` of the
 * runtime's namespace (private to its user: the pod and the owner read it, nobody else) and reaches
 * the container as `JUPYTERHUB_API_TOKEN` through a secretKeyRef, beside the rest of the
 * `JUPYTERHUB_*` environment (jupyterhub/spawner.py `get_env`). The token is revoked when the
 * runtime stops or goes, with every OAuth token issued for it.
 */
import { createHash } from "node:crypto";
import type { KubernetesObject, V1EnvVar, V1Secret } from "@kubernetes/client-node";
import { type ClusterClient, isNotFound } from "../../kube/index.js";
import type { Runtime } from "../api/runtime.js";
import { oauthClientId, serverAccessScopes, serverTokenScopes } from "../hub/oauth.js";
import { type HubOAuthClient, hubTokenKept, issueHubToken, revokeRuntimeTokens } from "../hub/tokens.js";
import { hubBaseUrl } from "../proxy/route.js";

export const SINGLEUSER_TOKEN_KEY = "token";
/** On the token Secret: the start it belongs to (a hash of the route token). */
const START_ANNOTATION = "tenantry.dev/jupyterhub-start";
/** On the token Secret: the id of the token it holds (to tell whether it was revoked). */
const TOKEN_ID_ANNOTATION = "tenantry.dev/jupyterhub-token-id";

export interface SingleUserServer {
  user: string;
  /** The JupyterHub server name (`""`: the default server). */
  server: string;
  /** The runtime's base path under the proxy (`/r/<route token>/`). */
  prefix: string;
  /** The JupyterHub API as the pod reaches it (`…/hub/api`). */
  apiUrl: string;
  /** The Secret holding the server's API token. */
  secretName: string;
}

export const singleUserSecretName = (runtime: string) => `${runtime}-jupyterhub`;

/** The OAuth client JupyterHub would register for this server. */
export function singleUserClient(server: SingleUserServer): HubOAuthClient {
  return {
    id: oauthClientId(server.user, server.server),
    redirectUri: `${server.prefix}oauth_callback`,
    user: server.user,
    server: server.server,
    scopes: [`access:servers!server=${server.user}/${server.server}`],
  };
}

/** KubeSpawner's environment for the server's container (its bind URL on `port`). */
export function singleUserEnv(server: SingleUserServer, port: number): V1EnvVar[] {
  const token = { secretKeyRef: { name: server.secretName, key: SINGLEUSER_TOKEN_KEY } };
  const access = JSON.stringify(serverAccessScopes(server.user, server.server));
  const client = singleUserClient(server);
  return [
    { name: "JUPYTERHUB_API_TOKEN", valueFrom: token },
    { name: "JPY_API_TOKEN", valueFrom: token },
    { name: "JUPYTERHUB_CLIENT_ID", value: client.id },
    // The Hub's API shares the proxy's origin (`/hub/api`): relative URLs reach it from the browser.
    { name: "JUPYTERHUB_HOST", value: "" },
    { name: "JUPYTERHUB_OAUTH_CALLBACK_URL", value: client.redirectUri },
    { name: "JUPYTERHUB_OAUTH_SCOPES", value: access },
    { name: "JUPYTERHUB_OAUTH_ACCESS_SCOPES", value: access },
    { name: "JUPYTERHUB_OAUTH_CLIENT_ALLOWED_SCOPES", value: "[]" },
    { name: "JUPYTERHUB_USER", value: server.user },
    { name: "JUPYTERHUB_SERVER_NAME", value: server.server },
    { name: "JUPYTERHUB_API_URL", value: server.apiUrl },
    {
      name: "JUPYTERHUB_ACTIVITY_URL",
      value: `${server.apiUrl}/users/${encodeURIComponent(server.user)}/activity`,
    },
    { name: "JUPYTERHUB_BASE_URL", value: hubBaseUrl(server.prefix) },
    { name: "JUPYTERHUB_SERVICE_PREFIX", value: server.prefix },
    { name: "JUPYTERHUB_SERVICE_URL", value: `http://0.0.0.0:${port}${server.prefix}` },
  ];
}

const startHash = (prefix: string) => createHash("sha256").update(prefix).digest("hex").slice(0, 32);

/**
 * The Secret holding this start's API token: the one already made for this start when its token is
 * still valid (a retried deploy), else a new token, every other token of the runtime revoked.
 */
export async function singleUserSecret(
  home: ClusterClient,
  tenantryNamespace: string,
  target: ClusterClient,
  runtime: Runtime,
  server: SingleUserServer,
): Promise<KubernetesObject> {
  const namespace = runtime.metadata!.namespace!;
  const start = startHash(server.prefix);
  const existing = await readSecret(target, namespace, server.secretName);
  const previous =
    existing?.metadata?.annotations?.[START_ANNOTATION] === start ? tokenOf(existing) : undefined;
  if (previous && (await tokenExists(home, tenantryNamespace, existing!)))
    return secretObject(server, namespace, start, previous, existing!);
  const { token, record } = await issueHubToken(
    home,
    tenantryNamespace,
    { username: server.user, groups: [], ...(runtime.spec.tenant ? { tenant: runtime.spec.tenant } : {}) },
    {
      scopes: serverTokenScopes(server.user, server.server),
      note: `Server at ${server.prefix}`,
      binding: { runtimeUid: runtime.metadata!.uid!, client: singleUserClient(server) },
    },
  );
  await revokeRuntimeTokens(home, tenantryNamespace, runtime.metadata!.uid!, token);
  return secretObject(server, namespace, start, token, undefined, record.id);
}

/** Revokes the runtime's server token and the OAuth tokens issued for it. */
export function revokeSingleUserTokens(home: ClusterClient, tenantryNamespace: string, runtime: Runtime) {
  return revokeRuntimeTokens(home, tenantryNamespace, runtime.metadata!.uid!);
}

function secretObject(
  server: SingleUserServer,
  namespace: string,
  start: string,
  token: string,
  existing?: V1Secret,
  tokenId?: string,
): KubernetesObject {
  const id = tokenId ?? existing?.metadata?.annotations?.[TOKEN_ID_ANNOTATION] ?? "";
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: server.secretName,
      namespace,
      annotations: { [START_ANNOTATION]: start, [TOKEN_ID_ANNOTATION]: id },
    },
    type: "Opaque",
    data: { [SINGLEUSER_TOKEN_KEY]: Buffer.from(token).toString("base64") },
  } as KubernetesObject;
}

function tokenOf(secret: V1Secret | undefined): string | undefined {
  const data = secret?.data?.[SINGLEUSER_TOKEN_KEY];
  return data ? Buffer.from(data, "base64").toString("utf8") : undefined;
}

async function readSecret(
  client: ClusterClient,
  namespace: string,
  name: string,
): Promise<V1Secret | undefined> {
  try {
    return await client.core.readNamespacedSecret({ name, namespace });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Whether the token the Secret names is still kept (not revoked) in tenantry's namespace. */
async function tokenExists(
  home: ClusterClient,
  tenantryNamespace: string,
  secret: V1Secret,
): Promise<boolean> {
  const id = secret.metadata?.annotations?.[TOKEN_ID_ANNOTATION];
  return id ? hubTokenKept(home, tenantryNamespace, id) : false;
}
