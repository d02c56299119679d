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
  startInformers,
  stopInformers,
} from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";

/** Every token of this kind starts so (and is told apart from identity tokens by it). */
export const HUB_TOKEN_PREFIX = "thub_";
export const HUB_TOKEN_LABEL = "tenantry.dev/hub-token";
const BY_USER = "user";
const BY_ID = "id";
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

export interface HubToken {
  id: string;
  owner: HubTokenOwner;
  /** As granted: already within the owner's scopes at the time. */
  scopes: string[];
  note: string;
  created: string;
  expiresAt: string;
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
  async issue(
    owner: HubTokenOwner,
    options: { scopes: string[]; note?: string; expiresInSeconds?: number },
  ): Promise<{ token: string; record: HubToken }> {
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
    };
    const body: V1Secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: secretName(id),
        namespace: this.namespace,
        labels: { [HUB_TOKEN_LABEL]: "true", "app.kubernetes.io/managed-by": "tenantry" },
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
      },
    };
    const created = await this.client.core.createNamespacedSecret({ namespace: this.namespace, body });
    if (!this.secrets.get(this.namespace, created.metadata!.name!)) this.recent.set(hash, created);
    return { token, record };
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
    };
  } catch {
    return undefined;
  }
}
