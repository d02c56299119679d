import { createHash } from "node:crypto";

/** Who a token belongs to, as an identity provider vouches for it. */
export interface Identity {
  /** Name the API server will know the user by (TokenReview `user.username`). */
  username: string;
  /** Stable identifier that survives a rename (Keystone user id, OIDC `sub`, built-in user uid). */
  uid: string;
  groups: string[];
  /** The tenant the provider puts the user in (Keystone project, OIDC claim, built-in user's tenant), as a Tenant name. */
  tenant?: string;
  /** The provider says the user administers that tenant (Keystone `admin` role, built-in tenant admin, …). */
  tenantAdmin: boolean;
  /** When the token stops being valid. */
  expiresAt?: Date;
  /** Which provider vouched: `builtin`, `keystone`, `oidc`. */
  provider: string;
  /**
   * Audiences the token was issued for (its `aud` claim); absent for tokens bound to no audience
   * (Keystone's). Tokens of tenantry's providers are also meant for the Kubernetes API's audiences.
   */
  audiences?: string[];
}

export type Authentication =
  | { authenticated: true; identity: Identity }
  | { authenticated: false; reason: string };

export interface PasswordCredentials {
  username: string;
  password: string;
  /** Keystone: the user's domain (default `Default`). */
  domain?: string;
  /** Keystone: the project to scope the token to (default: the user's default project). */
  tenant?: string;
}

export interface IssuedToken {
  token: string;
  expiresAt: Date;
  identity: Identity;
}

/**
 * One source of identities. Every implementation passes the same conformance suite
 * (test/identity/provider-conformance.ts): valid tokens authenticate with user, uid, groups and
 * tenant; expired, forged, revoked and malformed tokens are refused with a reason.
 */
export interface IdentityProvider {
  /** `builtin`, `keystone`, `oidc`, …: shown in logs and in TokenReview `extra`. */
  readonly name: string;
  /** Whether the token has this provider's shape (cheap, no I/O): lets several providers share one webhook. */
  recognizes(token: string): boolean;
  /** Validates a token. Never throws for a bad token: it answers `authenticated: false` with why. */
  authenticate(token: string): Promise<Authentication>;
  /** Exchanges a password for a token, where the provider supports it. Throws AuthenticationError. */
  login?(credentials: PasswordCredentials): Promise<IssuedToken>;
  /** Makes a token invalid before it expires, where the provider supports it. */
  revoke?(token: string): Promise<void>;
  stop?(): Promise<void>;
}

/** A login or token the provider refused; the message says why and is safe to show the user. */
export class AuthenticationError extends Error {
  override readonly name = "AuthenticationError";
}

/** An identity provider could not be reached or answered nonsense: not the user's fault. */
export class IdentityProviderUnavailable extends Error {
  override readonly name = "IdentityProviderUnavailable";
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** Tenant names leave room for `-<namespace>` suffixes. */
const MAX_TENANT_NAME = 40;

/**
 * A provider's project or group name as a Tenant name (a DNS label of at most 40 characters). A
 * name that already is one is kept; any other is lowercased, every run of other characters becomes
 * `-`, and a hash of the original is appended so two different names never map to one tenant.
 */
export function tenantNameFor(name: string): string {
  if (DNS_LABEL.test(name) && name.length <= MAX_TENANT_NAME) return name;
  const hash = createHash("sha256").update(name).digest("hex").slice(0, 8);
  const readable = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, MAX_TENANT_NAME - hash.length - 1)
    .replace(/-+$/g, "");
  return readable ? `${readable}-${hash}` : `t-${hash}`;
}
