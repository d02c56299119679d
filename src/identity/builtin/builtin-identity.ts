import { randomBytes, randomUUID } from "node:crypto";
import type { V1Secret } from "@kubernetes/client-node";
import {
  createLocalJWKSet,
  decodeJwt,
  type JWTPayload,
  errors as joseErrors,
  jwtVerify,
  SignJWT,
} from "jose";
import type { Logger } from "pino";
import { UserError } from "../../common/index.js";
import {
  applyStatus,
  type ClusterClient,
  Informer,
  isAlreadyExists,
  isNotFound,
  silentLogger,
} from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import { MAX_USERNAME, type User, type UserSpec } from "../api/user.js";
import {
  type Authentication,
  AuthenticationError,
  type Identity,
  type IdentityProvider,
  type IssuedToken,
  type PasswordCredentials,
} from "../providers/provider.js";
import { checkPassword, hashPassword, passwordMatches } from "./passwords.js";
import { RevocationList } from "./revocations.js";
import { SIGNING_ALGORITHM, SigningKeys } from "./signing-keys.js";

export const BUILTIN_PROVIDER = "builtin";
/** `aud` of every token the built-in identity service issues. */
export const TOKEN_AUDIENCE = "tenantry";
const PASSWORD_KEY = "passwordHash";
const USERNAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export interface BuiltinIdentityOptions {
  client: ClusterClient;
  /** Where the password Secrets, signing keys and revocation list live. */
  namespace: string;
  /**
   * `iss` of issued tokens: the URL the OIDC discovery document and JWKS are served from. When the
   * server's port is only known once it listens, leave it out and call useIssuer before start.
   */
  issuer?: string;
  /** Token lifetime; default 8 h, at most 7 days. */
  tokenTtlSeconds?: number;
  /** Signing keys rotate after this long; default 24 h. */
  keyRotationSeconds?: number;
  logger?: Logger;
}

export interface NewUser {
  name: string;
  password: string;
  displayName?: string;
  groups?: string[];
  tenant?: string;
  tenantAdmin?: boolean;
}

interface TokenClaims extends JWTPayload {
  preferred_username: string;
}

export const MAX_TOKEN_TTL_SECONDS = 7 * 24 * 3600;

/**
 * tenantry's own identity service for the embedded default: users are `User` objects, passwords
 * are scrypt hashes in Secrets, and tokens are ES256 JWTs signed with rotating keys published as a
 * JWKS, so any OIDC-aware client (kube-apiserver's own `--oidc-*` flags included) can verify them.
 * Revocation: one token (its `jti`), all of a user's tokens (`tokensNotBefore`), or the user
 * (disabled or deleted).
 */
export class BuiltinIdentity implements IdentityProvider {
  readonly name = BUILTIN_PROVIDER;
  readonly users: Informer<User>;
  readonly keys: SigningKeys;
  readonly revocations: RevocationList;
  private readonly ttlSeconds: number;
  private readonly logger: Logger;

  constructor(private readonly options: BuiltinIdentityOptions) {
    this.ttlSeconds = options.tokenTtlSeconds ?? 8 * 3600;
    if (
      !Number.isInteger(this.ttlSeconds) ||
      this.ttlSeconds < 1 ||
      this.ttlSeconds > MAX_TOKEN_TTL_SECONDS
    ) {
      throw new UserError(
        `token lifetime must be 1 to ${MAX_TOKEN_TTL_SECONDS} seconds, got ${this.ttlSeconds}`,
      );
    }
    this.logger = options.logger ?? silentLogger;
    this.users = Informer.forResource<User>(options.client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "User",
    });
    this.keys = new SigningKeys({
      client: options.client,
      namespace: options.namespace,
      ...(options.keyRotationSeconds ? { rotateAfterMs: options.keyRotationSeconds * 1000 } : {}),
      retainMs: MAX_TOKEN_TTL_SECONDS * 1000,
    });
    this.revocations = new RevocationList({ client: options.client, namespace: options.namespace });
  }

  private issuerUrl?: string;

  get issuer(): string {
    const issuer = this.issuerUrl ?? this.options.issuer;
    if (!issuer) throw new Error("the built-in identity service has no issuer URL yet");
    return issuer;
  }

  useIssuer(url: string): void {
    this.issuerUrl = url;
  }

  async start(): Promise<void> {
    await this.ensureNamespace();
    await this.keys.load();
    this.users.start();
    await Promise.all([this.users.waitForSync({ timeoutMs: 60_000 }), this.revocations.start()]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.users.stop(), this.revocations.stop()]);
  }

  recognizes(token: string): boolean {
    if (token.split(".").length !== 3) return false;
    try {
      return decodeJwt(token).iss === this.issuer;
    } catch {
      return false;
    }
  }

  async login(credentials: PasswordCredentials): Promise<IssuedToken> {
    const refused = new AuthenticationError("unknown user name or wrong password");
    if (!USERNAME.test(credentials.username) || credentials.username.length > MAX_USERNAME) throw refused;
    const user = await this.readUser(credentials.username);
    const hash = user ? await this.passwordHash(credentials.username) : undefined;
    // An unknown user costs a password check like a wrong password (timing tells no names).
    const matches = await passwordMatches(credentials.password, user ? hash : undefined, () =>
      this.decoyHash(),
    );
    if (!user || !matches) throw refused;
    if (user.spec.disabled) throw new AuthenticationError(`user "${credentials.username}" is disabled`);
    const issued = await this.issue(user);
    this.recordLogin(user).catch((err) =>
      this.logger.warn({ err, user: user.metadata?.name }, "recording login failed"),
    );
    return issued;
  }

  private decoy?: Promise<string>;

  /** A hash of a random password, checked against when the user does not exist. */
  private decoyHash(): Promise<string> {
    this.decoy ??= hashPassword(randomBytes(24).toString("base64url"));
    return this.decoy;
  }

  /** Signs a token for a user; `ttlSeconds` overrides the configured lifetime (down to 1 s). */
  async issue(user: User, ttlSeconds = this.ttlSeconds): Promise<IssuedToken> {
    await this.keys.refresh(60_000);
    const { kid, key } = await this.keys.signingKey();
    const now = Math.floor(Date.now() / 1000);
    const expiresAt = new Date((now + ttlSeconds) * 1000);
    const identity = identityOf(user, expiresAt);
    // The identity travels as standard claims too, so OIDC-aware verifiers need not ask tenantry.
    const token = await new SignJWT({
      preferred_username: identity.username,
      groups: identity.groups,
      ...(identity.tenant ? { tenant: identity.tenant } : {}),
      tenant_admin: identity.tenantAdmin,
    })
      .setProtectedHeader({ alg: SIGNING_ALGORITHM, kid, typ: "JWT" })
      .setIssuer(this.issuer)
      .setAudience(TOKEN_AUDIENCE)
      .setSubject(user.metadata!.uid!)
      .setJti(randomUUID())
      .setIssuedAt(now)
      .setExpirationTime(now + ttlSeconds)
      .sign(key);
    return { token, expiresAt, identity };
  }

  async authenticate(token: string): Promise<Authentication> {
    let payload: TokenClaims;
    try {
      payload = (await this.verify(token)).payload as TokenClaims;
    } catch (err) {
      return { authenticated: false, reason: describeJoseError(err) };
    }
    const username = payload.preferred_username;
    const user = this.users.get(undefined, username) ?? (await this.readUser(username));
    if (!user || user.metadata?.uid !== payload.sub) {
      return { authenticated: false, reason: `user "${username}" no longer exists` };
    }
    if (user.spec.disabled) return { authenticated: false, reason: `user "${username}" is disabled` };
    if (payload.jti && this.revocations.isRevoked(payload.jti)) {
      return { authenticated: false, reason: "the token was revoked" };
    }
    const notBefore = user.status?.tokensNotBefore ? Date.parse(user.status.tokensNotBefore) : 0;
    if ((payload.iat ?? 0) * 1000 < notBefore) {
      return {
        authenticated: false,
        reason: `every token of "${username}" issued before ${user.status?.tokensNotBefore} was revoked`,
      };
    }
    return {
      authenticated: true,
      identity: {
        ...identityOf(user, new Date((payload.exp ?? 0) * 1000)),
        audiences: audiencesOf(payload.aud),
      },
    };
  }

  /** Revokes one token: refused from now on, by every replica once its cache has the change. */
  async revoke(token: string): Promise<void> {
    const { payload } = await this.verify(token).catch((err: unknown) => {
      throw new AuthenticationError(describeJoseError(err));
    });
    if (!payload.jti || !payload.exp)
      throw new AuthenticationError("the token has no id or expiry to revoke");
    await this.revocations.revoke(payload.jti, new Date(payload.exp * 1000));
  }

  /** Revokes every token the user holds now; tokens issued afterwards work. */
  async revokeAllTokens(username: string): Promise<void> {
    const user = await this.readUser(username);
    if (!user) throw new UserError(`user "${username}" does not exist`);
    // Tokens carry whole seconds: a token issued in this very second is revoked too.
    const notBefore = new Date(Math.ceil(Date.now() / 1000) * 1000 + 1000).toISOString();
    await applyStatus(this.options.client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "User",
      metadata: { name: username },
      status: { ...user.status, tokensNotBefore: notBefore },
    } as User);
  }

  /**
   * Lifts a login lock at once, on every replica once its cache has the change: wrong passwords
   * before now stop counting against the user (and against the clients that sent them).
   */
  async unlockLogins(username: string): Promise<void> {
    const user = await this.readUser(username);
    if (!user) throw new UserError(`user "${username}" does not exist`);
    await applyStatus(this.options.client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "User",
      metadata: { name: username },
      status: { ...user.status, loginsUnlockedAt: new Date().toISOString() },
    } as User);
  }

  /** When an administrator last lifted the user's login lock (ms since the epoch), from the cache; 0 if never. */
  loginsUnlockedAt(username: string): number {
    const at = this.users.get(undefined, username)?.status?.loginsUnlockedAt;
    return at ? Date.parse(at) : 0;
  }

  jwks(): ReturnType<SigningKeys["jwks"]> {
    return this.keys.jwks();
  }

  // -- user management ----------------------------------------------------------------------

  async createUser(user: NewUser): Promise<User> {
    validateUsername(user.name);
    checkPassword(user.password);
    const hash = await hashPassword(user.password);
    const spec: UserSpec = {
      ...(user.displayName ? { displayName: user.displayName } : {}),
      ...(user.groups?.length ? { groups: user.groups } : {}),
      ...(user.tenant ? { tenant: user.tenant } : {}),
      tenantAdmin: user.tenantAdmin ?? false,
      disabled: false,
    };
    let created: User;
    try {
      created = (await this.options.client.objects.create({
        apiVersion: TENANTS_API_VERSION,
        kind: "User",
        metadata: { name: user.name },
        spec,
      } as User)) as User;
    } catch (err) {
      if (isAlreadyExists(err)) throw new UserError(`user "${user.name}" already exists`);
      throw err;
    }
    try {
      await this.writePassword(created, hash);
    } catch (err) {
      // No user without a password left behind.
      await this.options.client.objects.delete(created).catch(() => {});
      throw err;
    }
    return created;
  }

  async setPassword(username: string, password: string): Promise<void> {
    checkPassword(password);
    const user = await this.readUser(username);
    if (!user) throw new UserError(`user "${username}" does not exist`);
    await this.writePassword(user, await hashPassword(password));
  }

  async deleteUser(username: string): Promise<boolean> {
    const user = await this.readUser(username);
    if (!user) return false;
    // The password Secret is owned by the User: the garbage collector removes it.
    await this.options.client.objects.delete(user);
    return true;
  }

  async listUsers(): Promise<User[]> {
    const list = (await this.options.client.objects.getJson(`/apis/${TENANTS_API_VERSION}/users`)) as {
      items: User[];
    };
    return list.items;
  }

  async readUser(username: string): Promise<User | undefined> {
    if (!USERNAME.test(username) || username.length > MAX_USERNAME) return undefined;
    try {
      return (await this.options.client.objects.read({
        apiVersion: TENANTS_API_VERSION,
        kind: "User",
        metadata: { name: username },
      })) as User;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private keySet?: { kids: string; set: ReturnType<typeof createLocalJWKSet> };

  /** The verification key set, rebuilt only when the keys change (importing keys costs as much as verifying). */
  private verificationKeys(): ReturnType<typeof createLocalJWKSet> {
    const jwks = this.keys.jwks();
    const kids = jwks.keys.map((k) => k.kid).join(",");
    if (this.keySet?.kids !== kids) this.keySet = { kids, set: createLocalJWKSet(jwks) };
    return this.keySet.set;
  }

  private verify(token: string) {
    return jwtVerify(token, this.verificationKeys(), {
      issuer: this.issuer,
      audience: TOKEN_AUDIENCE,
      algorithms: [SIGNING_ALGORITHM],
      requiredClaims: ["sub", "exp", "iat", "jti", "preferred_username"],
    });
  }

  private secretName(username: string): string {
    return `user-${username}`;
  }

  private async passwordHash(username: string): Promise<string | undefined> {
    try {
      const secret = await this.options.client.core.readNamespacedSecret({
        name: this.secretName(username),
        namespace: this.options.namespace,
      });
      const raw = secret.data?.[PASSWORD_KEY];
      return raw ? Buffer.from(raw, "base64").toString() : undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async writePassword(user: User, hash: string): Promise<void> {
    const name = this.secretName(user.metadata!.name!);
    const body: V1Secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name,
        namespace: this.options.namespace,
        labels: { "app.kubernetes.io/managed-by": "tenantry", "tenantry.dev/user": user.metadata!.name! },
        // Cluster-scoped owner of a namespaced object: deleting the User deletes its password.
        ownerReferences: [
          {
            apiVersion: TENANTS_API_VERSION,
            kind: "User",
            name: user.metadata!.name!,
            uid: user.metadata!.uid!,
          },
        ],
      },
      type: "Opaque",
      data: { [PASSWORD_KEY]: Buffer.from(hash).toString("base64") },
    };
    const core = this.options.client.core;
    try {
      await core.createNamespacedSecret({ namespace: this.options.namespace, body });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      await core.replaceNamespacedSecret({ name, namespace: this.options.namespace, body });
    }
  }

  private async recordLogin(user: User): Promise<void> {
    await applyStatus(this.options.client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "User",
      metadata: { name: user.metadata!.name! },
      status: { ...user.status, lastLogin: new Date().toISOString() },
    } as User);
  }

  private async ensureNamespace(): Promise<void> {
    try {
      await this.options.client.core.createNamespace({
        body: { metadata: { name: this.options.namespace } },
      });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }
}

export function identityOf(user: User, expiresAt: Date): Identity {
  return {
    username: user.metadata!.name!,
    uid: user.metadata!.uid!,
    groups: [...(user.spec.groups ?? [])],
    ...(user.spec.tenant ? { tenant: user.spec.tenant } : {}),
    tenantAdmin: user.spec.tenantAdmin ?? false,
    expiresAt,
    provider: BUILTIN_PROVIDER,
  };
}

function validateUsername(name: string): void {
  if (!USERNAME.test(name) || name.length > MAX_USERNAME) {
    throw new UserError(
      `user name "${name}" is not valid: use at most ${MAX_USERNAME} lowercase letters, digits, "-" and ".", starting and ending with a letter or digit`,
    );
  }
}

/** jose's errors, in words a user can act on. */
export function describeJoseError(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return "the token has expired";
  if (err instanceof joseErrors.JWTClaimValidationFailed)
    return `the token's ${err.claim} claim is not acceptable (${err.reason})`;
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return "the token's signature is invalid";
  if (err instanceof joseErrors.JWKSNoMatchingKey) return "the token was signed with an unknown key";
  if (err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid)
    return "the token is malformed";
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return "the token's signing algorithm is not accepted";
  return `the token is invalid: ${(err as Error).message}`;
}

/** A JWT's `aud` claim as a list. */
export function audiencesOf(aud: string | string[] | undefined): string[] {
  if (aud === undefined) return [];
  return Array.isArray(aud) ? aud : [aud];
}
