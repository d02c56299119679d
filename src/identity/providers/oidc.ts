import { request } from "node:https";
import { createRemoteJWKSet, customFetch, decodeJwt, type JWTPayload, jwtVerify } from "jose";
import { audiencesOf, describeJoseError } from "../builtin/builtin-identity.js";
import {
  type Authentication,
  type Identity,
  type IdentityProvider,
  IdentityProviderUnavailable,
  tenantNameFor,
} from "./provider.js";

export interface OidcClaims {
  /** Claim holding the username; default `preferred_username` (`sub` is always the uid). */
  username?: string;
  groups?: string;
  /** Claim naming the user's tenant; default `tenant`. */
  tenant?: string;
  /** Boolean claim making the user tenant admin; default `tenant_admin`. */
  tenantAdmin?: string;
}

export const DEFAULT_OIDC_PREFIX = "oidc:";

export interface OidcProviderOptions {
  /** Issuer URL exactly as in the tokens' `iss`; `/.well-known/openid-configuration` is read below it. */
  issuer: string;
  /** The client id tokens must be issued to (`aud`). */
  audience: string;
  /** CA bundle for the issuer's TLS certificate, when it is not publicly trusted. */
  caPem?: string;
  claims?: OidcClaims;
  /**
   * Prepended to usernames and groups, so they cannot pose as other users (kube-apiserver's
   * `--oidc-username-prefix`). Default `oidc:`; `""` turns it off.
   */
  prefix?: string;
  /** Members of any of these groups administer their tenant. */
  adminGroups?: string[];
  timeoutMs?: number;
}

/** An OIDC provider's ID tokens, verified with the keys its discovery document names. */
export class OidcIdentityProvider implements IdentityProvider {
  readonly name = "oidc";
  private jwks?: ReturnType<typeof createRemoteJWKSet>;
  private readonly claims: Required<OidcClaims>;

  constructor(private readonly options: OidcProviderOptions) {
    this.claims = {
      username: options.claims?.username ?? "preferred_username",
      groups: options.claims?.groups ?? "groups",
      tenant: options.claims?.tenant ?? "tenant",
      tenantAdmin: options.claims?.tenantAdmin ?? "tenant_admin",
    };
  }

  recognizes(token: string): boolean {
    if (token.split(".").length !== 3) return false;
    try {
      return decodeJwt(token).iss === this.options.issuer;
    } catch {
      return false;
    }
  }

  async authenticate(token: string): Promise<Authentication> {
    if (!this.recognizes(token)) return { authenticated: false, reason: "not a token of this issuer" };
    const jwks = await this.keySet();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, jwks, {
        issuer: this.options.issuer,
        audience: this.options.audience,
        requiredClaims: ["sub", "exp"],
      }));
    } catch (err) {
      // jose's own errors (ERR_JW*) are about the token; anything else is about reaching the issuer.
      const code = (err as { code?: string }).code ?? "";
      if (code === "ERR_JWKS_TIMEOUT" || !code.startsWith("ERR_J")) {
        throw new IdentityProviderUnavailable(
          `OIDC issuer ${this.options.issuer}: ${(err as Error).message}`,
        );
      }
      return { authenticated: false, reason: describeJoseError(err) };
    }
    const username = payload[this.claims.username];
    if (typeof username !== "string" || !username) {
      return { authenticated: false, reason: `the token has no ${this.claims.username} claim` };
    }
    const prefix = this.options.prefix ?? DEFAULT_OIDC_PREFIX;
    const rawGroups = payload[this.claims.groups];
    const groups = Array.isArray(rawGroups)
      ? rawGroups.filter((g): g is string => typeof g === "string")
      : [];
    const tenant = payload[this.claims.tenant];
    const identity: Identity = {
      username: `${prefix}${username}`,
      uid: payload.sub!,
      groups: groups.map((g) => `${prefix}${g}`),
      ...(typeof tenant === "string" && tenant ? { tenant: tenantNameFor(tenant) } : {}),
      tenantAdmin:
        payload[this.claims.tenantAdmin] === true ||
        groups.some((g) => this.options.adminGroups?.includes(g) ?? false),
      expiresAt: new Date(payload.exp! * 1000),
      provider: this.name,
      audiences: audiencesOf(payload.aud),
    };
    return { authenticated: true, identity };
  }

  /** Reads the discovery document once; jose then fetches and caches the keys, refetching on an unknown kid. */
  private async keySet(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    if (this.jwks) return this.jwks;
    const url = `${this.options.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
    const response = await this.fetch(url, {
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
    }).catch((err: Error) => {
      throw new IdentityProviderUnavailable(`OIDC discovery at ${url} failed: ${err.message}`);
    });
    if (!response.ok)
      throw new IdentityProviderUnavailable(`OIDC discovery at ${url} answered ${response.status}`);
    const document = (await response.json()) as { issuer?: string; jwks_uri?: string };
    if (document.issuer !== this.options.issuer || !document.jwks_uri) {
      throw new IdentityProviderUnavailable(
        `OIDC discovery at ${url} names issuer ${document.issuer ?? "(none)"} and jwks_uri ${document.jwks_uri ?? "(none)"}; expected issuer ${this.options.issuer}`,
      );
    }
    this.jwks = createRemoteJWKSet(new URL(document.jwks_uri), {
      timeoutDuration: this.options.timeoutMs ?? 5000,
      cooldownDuration: 30_000,
      [customFetch]: (input: string, init: { signal?: AbortSignal }) => this.fetch(input, init),
    });
    return this.jwks;
  }

  /** GET with the configured CA (global fetch cannot take one on Node 20). */
  private fetch(url: string, init: { signal?: AbortSignal }): Promise<Response> {
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        { method: "GET", ...(this.options.caPem ? { ca: this.options.caPem } : {}), signal: init.signal },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () =>
            resolve(
              new Response(Buffer.concat(chunks), {
                status: res.statusCode ?? 500,
                headers: { "content-type": String(res.headers["content-type"] ?? "application/json") },
              }),
            ),
          );
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end();
    });
  }
}
