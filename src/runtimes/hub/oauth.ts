/**
 * JupyterHub's OAuth provider for single-user servers (jupyterhub/apihandlers/auth.py, RFC 6749's
 * authorization-code grant with RFC 7636's PKCE): each server of a KubeSpawner-style runtime is an
 * OAuth client whose id is `jupyterhub-user-<name>[-<server>]`, whose one redirect URI is its
 * `oauth_callback` and whose secret is the server's API token. A code is good once, for five
 * minutes, for that client and redirect URI; it is kept as a Secret of tenantry's namespace, so any
 * replica redeems it, and redeeming deletes it under a uid precondition, so only one redeems it.
 */
import { createHash, randomBytes } from "node:crypto";
import type { V1Secret } from "@kubernetes/client-node";
import { type ClusterClient, ignoreNotFound, isNotFound, statusCode } from "../../kube/index.js";
import type { HubTokenOwner } from "./tokens.js";

export const OAUTH_CODE_SECONDS = 300;
/** How long a token issued through OAuth lives (JupyterHub's cookie_max_age_days, 14 days). */
export const OAUTH_TOKEN_SECONDS = 14 * 24 * 3600;
const CODE_LABEL = "tenantry.dev/hub-oauth-code";

/** The OAuth client id of `user`'s server `server` (`""`: the default server), as JupyterHub names it. */
export function oauthClientId(user: string, server: string): string {
  const name = `jupyterhub-user-${encodeURIComponent(user)}`;
  return server ? `${name}-${encodeURIComponent(server)}` : name;
}

/** The scopes that let a token reach the server (JupyterHub's Spawner.oauth_access_scopes). */
export function serverAccessScopes(user: string, server: string): string[] {
  return [`access:servers!server=${user}/${server}`, `access:servers!user=${user}`];
}

/** The scopes JupyterHub's `server` role gives a server's own API token. */
export function serverTokenScopes(user: string, server: string): string[] {
  return [`access:servers!server=${user}/${server}`, `users:activity!user=${user}`];
}

/** RFC 7636's S256 challenge of a verifier. */
export function pkceChallenge(verifier: string): string {
  return createHash("sha256").update(verifier).digest("base64url");
}

/** An OAuth error as RFC 6749 §5.2 answers it: `{"error": …, "error_description": …}`. */
export class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    description: string,
  ) {
    super(description);
  }
}

export interface OAuthCode {
  clientId: string;
  redirectUri: string;
  owner: HubTokenOwner;
  scopes: string[];
  runtimeUid: string;
  /** PKCE: the S256 challenge the authorize request carried. */
  codeChallenge?: string;
  expiresAt: string;
}

const codeSecretName = (code: string) =>
  `tenantry-hub-code-${createHash("sha256").update(code).digest("hex").slice(0, 40)}`;

export class OAuthCodes {
  constructor(
    private readonly client: ClusterClient,
    private readonly namespace: string,
  ) {}

  async issue(code: Omit<OAuthCode, "expiresAt">): Promise<string> {
    await this.removeExpired();
    const value = randomBytes(24).toString("base64url");
    const record: OAuthCode = {
      ...code,
      expiresAt: new Date(Date.now() + OAUTH_CODE_SECONDS * 1000).toISOString(),
    };
    const body: V1Secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: codeSecretName(value),
        namespace: this.namespace,
        labels: { [CODE_LABEL]: "true", "app.kubernetes.io/managed-by": "tenantry" },
      },
      type: "tenantry.dev/hub-oauth-code",
      stringData: { code: JSON.stringify(record) },
    };
    await this.client.core.createNamespacedSecret({ namespace: this.namespace, body });
    return value;
  }

  /** Codes never redeemed go once expired, so abandoned logins leave nothing behind. */
  private async removeExpired(): Promise<void> {
    const codes = await this.client.core.listNamespacedSecret({
      namespace: this.namespace,
      labelSelector: `${CODE_LABEL}=true`,
    });
    for (const secret of codes.items) {
      if (Date.parse(recordOf(secret)?.expiresAt ?? "") > Date.now()) continue;
      await ignoreNotFound(
        this.client.core.deleteNamespacedSecret({ name: secret.metadata!.name!, namespace: this.namespace }),
      );
    }
  }

  /** The code's record, once: the Secret is deleted by whoever read it; undefined if it was not there. */
  async redeem(code: string): Promise<OAuthCode | undefined> {
    const name = codeSecretName(code);
    let secret: V1Secret;
    try {
      secret = await this.client.core.readNamespacedSecret({ name, namespace: this.namespace });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
    try {
      await this.client.core.deleteNamespacedSecret({
        name,
        namespace: this.namespace,
        body: { preconditions: { uid: secret.metadata!.uid! } },
      });
    } catch (err) {
      // Another request redeemed it between the read and the delete.
      if (isNotFound(err) || statusCode(err) === 409) return undefined;
      throw err;
    }
    const record = recordOf(secret);
    return record && Date.parse(record.expiresAt) > Date.now() ? record : undefined;
  }
}

function recordOf(secret: V1Secret): OAuthCode | undefined {
  try {
    return JSON.parse(Buffer.from(secret.data?.code ?? "", "base64").toString("utf8")) as OAuthCode;
  } catch {
    return undefined;
  }
}
