import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { TLSSocket } from "node:tls";
import { AuthenticationV1Api } from "@kubernetes/client-node";
import { LRUCache } from "lru-cache";
import { type Authenticator, type Identity, kubernetesUserOf, TENANT_EXTRA_KEY } from "../identity/index.js";
import type { ClusterClient } from "../kube/index.js";
import type { Caller } from "./scope.js";

export type CallerAuthentication = { ok: true; caller: Caller } | { ok: false; message: string };

/** Where kube-apiserver publishes the CA its client certificates are signed by. */
export const CLIENT_CA_CONFIGMAP = { namespace: "kube-system", name: "extension-apiserver-authentication" };

/** Reads the CA kube-apiserver trusts for client certificates (`--client-ca-file`). */
export async function readClientCa(client: ClusterClient): Promise<string> {
  const cm = await client.core.readNamespacedConfigMap(CLIENT_CA_CONFIGMAP);
  const pem = cm.data?.["client-ca-file"];
  if (!pem) {
    throw new Error(
      `${CLIENT_CA_CONFIGMAP.namespace}/${CLIENT_CA_CONFIGMAP.name} has no client-ca-file: the API server does not accept client certificates`,
    );
  }
  return pem;
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const WEBSOCKET_TOKEN_PREFIX = "base64url.bearer.authorization.k8s.io.";
const REVIEW_CACHE_TTL_MS = 10_000;
const REVIEW_CACHE_SIZE = 10_000;

function asList(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

/**
 * Who a request comes from: a client certificate signed by the cluster's client CA (CN is the user,
 * O the groups, as kube-apiserver reads it), or a bearer token. Tokens of tenantry's identity
 * providers are checked by them directly; any other token (service accounts, the cluster's own
 * authenticators) by a TokenReview, so the gateway accepts every token the API server accepts.
 */
export class CallerAuthenticator {
  private readonly reviews = new LRUCache<string, { caller: Caller | undefined; message: string }>({
    max: REVIEW_CACHE_SIZE,
    ttl: REVIEW_CACHE_TTL_MS,
  });
  private readonly byConnection = new WeakMap<TLSSocket, { caller?: Caller; presented: boolean }>();
  private api?: AuthenticationV1Api;

  constructor(
    private readonly client: ClusterClient,
    private readonly authenticator: Authenticator | undefined,
    /** Called for each token a tenantry identity provider vouched for (first-login provisioning). */
    private readonly onAuthenticated?: (identity: Identity) => Promise<void>,
  ) {}

  async authenticate(socket: TLSSocket, headers: IncomingHttpHeaders): Promise<CallerAuthentication> {
    const certified = this.certificateCaller(socket);
    if (certified.caller) return { ok: true, caller: certified.caller };
    const hasCertificate = certified.presented;
    const token = bearerToken(headers);
    if (token) return this.authenticateToken(token);
    if (hasCertificate) {
      return {
        ok: false,
        message: `the client certificate is not valid for this cluster (${socket.authorizationError ?? "it has no common name"})`,
      };
    }
    return { ok: false, message: "no client certificate or bearer token was presented" };
  }

  /** The client certificate's user; a connection keeps its certificate, so it is read once per connection. */
  private certificateCaller(socket: TLSSocket): { caller?: Caller; presented: boolean } {
    const known = this.byConnection.get(socket);
    if (known) return known;
    const peer = socket.getPeerCertificate();
    const presented = !!peer && Object.keys(peer).length > 0;
    let result: { caller?: Caller; presented: boolean } = { presented };
    const username = presented && socket.authorized ? asList(peer.subject?.CN)[0] : undefined;
    if (username) {
      result = {
        presented,
        caller: { username, groups: asList(peer.subject?.O), extra: {}, via: "certificate" },
      };
    }
    this.byConnection.set(socket, result);
    return result;
  }

  private async authenticateToken(token: string): Promise<CallerAuthentication> {
    if (this.authenticator?.providers.some((p) => p.recognizes(token))) {
      const result = await this.authenticator.authenticate(token);
      if (!result.authenticated) return { ok: false, message: `invalid bearer token: ${result.reason}` };
      await this.onAuthenticated?.(result.identity);
      // The user exactly as the token webhook presents them to the API server.
      const user = kubernetesUserOf(result.identity);
      return {
        ok: true,
        caller: {
          username: user.username,
          ...(user.uid ? { uid: user.uid } : {}),
          groups: user.groups,
          ...(result.identity.tenant ? { tenant: result.identity.tenant } : {}),
          extra: user.extra,
          via: "token",
        },
      };
    }
    return this.review(token);
  }

  private async review(token: string): Promise<CallerAuthentication> {
    const key = createHash("sha256").update(token).digest("base64url");
    const cached = this.reviews.get(key);
    if (cached) {
      return cached.caller ? { ok: true, caller: cached.caller } : { ok: false, message: cached.message };
    }
    this.api ??= this.client.kubeConfig.makeApiClient(AuthenticationV1Api);
    const review = await this.api.createTokenReview({ body: { spec: { token } } });
    const user = review.status?.user;
    let caller: Caller | undefined;
    let message = "";
    if (review.status?.authenticated && user?.username) {
      const tenant = user.extra?.[TENANT_EXTRA_KEY]?.[0];
      caller = {
        username: user.username,
        ...(user.uid ? { uid: user.uid } : {}),
        groups: user.groups ?? [],
        ...(tenant ? { tenant } : {}),
        extra: user.extra ?? {},
        via: "token",
      };
    } else {
      message = `invalid bearer token${review.status?.error ? `: ${review.status.error}` : ""}`;
    }
    this.reviews.set(key, { caller, message });
    return caller ? { ok: true, caller } : { ok: false, message };
  }
}

/**
 * The bearer token of a request: the Authorization header, or for browsers' WebSockets (which
 * cannot set headers) the subprotocol `base64url.bearer.authorization.k8s.io.<token>`, as the API
 * server accepts it.
 */
export function bearerToken(headers: IncomingHttpHeaders): string | undefined {
  const match = BEARER.exec(headers.authorization ?? "");
  if (match) return match[1];
  for (const protocol of (headers["sec-websocket-protocol"] ?? "").split(",")) {
    const trimmed = protocol.trim();
    if (trimmed.startsWith(WEBSOCKET_TOKEN_PREFIX)) {
      try {
        return Buffer.from(trimmed.slice(WEBSOCKET_TOKEN_PREFIX.length), "base64url").toString("utf8");
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** The WebSocket subprotocols without the one carrying a token, which must not reach the API server. */
export function withoutTokenProtocol(value: string): string {
  return value
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p && !p.startsWith(WEBSOCKET_TOKEN_PREFIX))
    .join(", ");
}
