/**
 * API tokens of the JupyterHub REST API, as JupyterHub keeps them: opaque strings of which only a
 * hash is stored, each with its owner, scopes, note and expiry, listed and revoked by id. Issued
 * only to someone tenantry's identity vouched for (their own identity token, or a token of this
 * kind). Kept as Secrets in tenantry's namespace (never a tenant's), read from an informer; a
 * built-in identity user's tokens are owned by their User, so they go with the user.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { KubernetesObject, V1Secret } from "@kubernetes/client-node";
import {
  type ClusterClient,
  Informer,
  ignoreNotFound,
  isNotFound,
  startInformers,
  stopInformers,
} from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";

/** Every token of this kind starts so (and is told apart from identity tokens by it). */
export const HUB_TOKEN_PREFIX = "thub_";
export const HUB_TOKEN_LABEL = "tenantry.dev/hub-token";
/** On the tokens bound to one runtime (its server's API token, OAuth tokens for it): the Runtime's uid. */
export const HUB_RUNTIME_LABEL = "tenantry.dev/hub-runtime";
const BY_USER = "user";
const BY_ID = "id";
const BY_CLIENT = "client";
/** A token without an expiry asked for, or asking for more, lives this long. */
export const MAX_HUB_TOKEN_SECONDS = 365 * 24 * 3600;

export interface HubTokenOwner {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
  tenant?: string;
  /** The identity provider that vouched for them (`builtin`: their User owns the token). */
  provider?: string;
}

/**
 * The OAuth client a server's API token is the secret of (JupyterHub registers one per server): its
 * id (`jupyterhub-user-<name>[-<server>]`), the one redirect URI it may use, the server it opens.
 */
export interface HubOAuthClient {
  id: string;
  redirectUri: string;
  user: string;
  server: string;
  /** What its OAuth tokens are given: access to that server. */
  scopes: string[];
}

export interface HubTokenBinding {
  /** The Runtime the token goes with: revoked when it stops or goes. */
  runtimeUid: string;
  /** Set on a server's API token: the OAuth client it is the secret of. */
  client?: HubOAuthClient;
}

export interface HubToken {
  id: string;
  owner: HubTokenOwner;
  /** As granted: already within the owner's scopes at the time. */
  scopes: string[];
  note: string;
  created: string;
  expiresAt: string;
  /** `api_token`, or `oauth` for a token issued through OAuth. */
  kind?: "api_token" | "oauth";
  binding?: HubTokenBinding;
}

export interface IssueOptions {
  scopes: string[];
  note?: string;
  expiresInSeconds?: number;
  kind?: "api_token" | "oauth";
  binding?: HubTokenBinding;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const idOf = (hash: string) => `t${hash.slice(0, 20)}`;
const secretName = (id: string) => `tenantry-hub-token-${id.slice(1)}`;

export class HubTokens {
  private readonly secrets: Informer<V1Secret>;
  /** Tokens issued here that the informer has not delivered yet, by hash. */
  private readonly recent = new Map<string, V1Secret>();

  constructor(
    private readonly client: ClusterClient,
    private readonly namespace: string,
  ) {
    this.secrets = Informer.forResource<V1Secret>(client, {
      apiVersion: "v1",
      kind: "Secret",
      namespace,
      labelSelector: `${HUB_TOKEN_LABEL}=true`,
    });
    this.secrets.addIndex(BY_USER, (s) => [field(s, "user")]);
    this.secrets.addIndex(BY_ID, (s) => [idOf(field(s, "sha256"))]);
    this.secrets.addIndex(BY_CLIENT, (s) => {
      const client = recordOf(s)?.binding?.client?.id;
      return client ? [client] : [];
    });
    this.secrets.addHandler({
      onAdd: (s) => this.recent.delete(field(s, "sha256")),
      onUpdate: (_o, s) => this.recent.delete(field(s, "sha256")),
    });
  }

  start(): Promise<void> {
    return startInformers([this.secrets as unknown as Informer<KubernetesObject>]);
  }

  stop(): Promise<void> {
    return stopInformers([this.secrets as unknown as Informer<KubernetesObject>]);
  }

  /** A new token for `owner`; the token itself is in the answer only. */
  async issue(owner: HubTokenOwner, options: IssueOptions): Promise<{ token: string; record: HubToken }> {
    const issued = await issueHubToken(this.client, this.namespace, owner, options);
    if (!this.secrets.get(this.namespace, issued.secret.metadata!.name!))
      this.recent.set(sha256(issued.token), issued.secret);
    return { token: issued.token, record: issued.record };
  }

  /** The server API token that is the secret of OAuth client `id`, when its runtime still has one. */
  forClient(id: string): HubToken[] {
    return this.secrets
      .byIndex(BY_CLIENT, id)
      .map(recordOf)
      .filter((r): r is HubToken => r !== undefined && Date.parse(r.expiresAt) > Date.now());
  }

  /** The unexpired token's record; undefined for anything else. */
  find(token: string): HubToken | undefined {
    if (!token.startsWith(HUB_TOKEN_PREFIX)) return undefined;
    const hash = sha256(token);
    const secret = this.secrets.get(this.namespace, secretName(idOf(hash))) ?? this.recent.get(hash);
    if (!secret) return undefined;
    const stored = Buffer.from(field(secret, "sha256"));
    if (stored.length !== hash.length || !timingSafeEqual(stored, Buffer.from(hash))) return undefined;
    const record = recordOf(secret);
    return record && Date.parse(record.expiresAt) > Date.now() ? record : undefined;
  }

  list(user: string): HubToken[] {
    return this.secrets
      .byIndex(BY_USER, user)
      .map(recordOf)
      .filter((r): r is HubToken => r !== undefined)
      .sort((a, b) => a.created.localeCompare(b.created));
  }

  get(user: string, id: string): HubToken | undefined {
    const record = this.secrets.byIndex(BY_ID, id).map(recordOf)[0];
    return record?.owner.username === user ? record : undefined;
  }

  /** Revokes one of `user`'s tokens; false when there is none of that id. */
  async revoke(user: string, id: string): Promise<boolean> {
    if (!this.get(user, id)) return false;
    await ignoreNotFound(
      this.client.core.deleteNamespacedSecret({ name: secretName(id), namespace: this.namespace }),
    );
    return true;
  }
}

/**
 * Issues a token: a Secret of tenantry's namespace holding its hash and record (the controllers
 * issue a server's token with this; the JupyterHub API through `HubTokens`, which reads them).
 */
export async function issueHubToken(
  client: ClusterClient,
  namespace: string,
  owner: HubTokenOwner,
  options: IssueOptions,
): Promise<{ token: string; record: HubToken; secret: V1Secret }> {
  const token = `${HUB_TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
  const hash = sha256(token);
  const id = idOf(hash);
  const now = new Date();
  const lifetime = Math.min(options.expiresInSeconds || MAX_HUB_TOKEN_SECONDS, MAX_HUB_TOKEN_SECONDS);
  const record: HubToken = {
    id,
    owner,
    scopes: options.scopes,
    note: options.note ?? "",
    created: now.toISOString(),
    expiresAt: new Date(now.getTime() + lifetime * 1000).toISOString(),
    kind: options.kind ?? "api_token",
    ...(options.binding ? { binding: options.binding } : {}),
  };
  const body: V1Secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: secretName(id),
      namespace,
      labels: {
        [HUB_TOKEN_LABEL]: "true",
        "app.kubernetes.io/managed-by": "tenantry",
        ...(options.binding ? { [HUB_RUNTIME_LABEL]: options.binding.runtimeUid } : {}),
      },
      ...(owner.provider === "builtin" && owner.uid
        ? {
            ownerReferences: [
              { apiVersion: TENANTS_API_VERSION, kind: "User", name: owner.username, uid: owner.uid },
            ],
          }
        : {}),
    },
    type: "tenantry.dev/hub-token",
    stringData: {
      sha256: hash,
      user: owner.username,
      owner: JSON.stringify(owner),
      scopes: JSON.stringify(record.scopes),
      note: record.note,
      created: record.created,
      expiresAt: record.expiresAt,
      kind: record.kind!,
      ...(options.binding ? { binding: JSON.stringify(options.binding) } : {}),
    },
  };
  const secret = await client.core.createNamespacedSecret({ namespace, body });
  return { token, record, secret };
}

/** Whether the token of id `id` is still kept (not revoked, not expired away). */
export async function hubTokenKept(client: ClusterClient, namespace: string, id: string): Promise<boolean> {
  try {
    await client.core.readNamespacedSecret({ name: secretName(id), namespace });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** Revokes every token bound to the runtime `runtimeUid` (its server's API token and OAuth tokens), but `keep`. */
export async function revokeRuntimeTokens(
  client: ClusterClient,
  namespace: string,
  runtimeUid: string,
  keep?: string,
): Promise<void> {
  const selector = `${HUB_TOKEN_LABEL}=true,${HUB_RUNTIME_LABEL}=${runtimeUid}`;
  const found = await client.core.listNamespacedSecret({ namespace, labelSelector: selector });
  const keepName = keep === undefined ? undefined : secretName(idOf(sha256(keep)));
  for (const secret of found.items) {
    if (secret.metadata?.name === keepName) continue;
    await ignoreNotFound(client.core.deleteNamespacedSecret({ name: secret.metadata!.name!, namespace }));
  }
}

/** A Secret's value: `stringData` before the API server has encoded it, `data` after. */
function field(secret: V1Secret, key: string): string {
  const plain = secret.stringData?.[key];
  if (plain !== undefined) return plain;
  const data = secret.data?.[key];
  return data === undefined ? "" : Buffer.from(data, "base64").toString("utf8");
}

function recordOf(secret: V1Secret): HubToken | undefined {
  try {
    return {
      id: idOf(field(secret, "sha256")),
      owner: JSON.parse(field(secret, "owner")) as HubTokenOwner,
      scopes: JSON.parse(field(secret, "scopes")) as string[],
      note: field(secret, "note"),
      created: field(secret, "created"),
      expiresAt: field(secret, "expiresAt"),
      kind: field(secret, "kind") === "oauth" ? "oauth" : "api_token",
      ...(field(secret, "binding")
        ? { binding: JSON.parse(field(secret, "binding")) as HubTokenBinding }
        : {}),
    };
  } catch {
    return undefined;
  }
}
