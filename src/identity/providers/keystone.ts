import {
  describeFailure,
  keystoneFetch,
  keystoneMessage,
  passwordAuth,
  subjectTokenOf,
} from "../../keystone/index.js";
import {
  type Authentication,
  AuthenticationError,
  type Identity,
  type IdentityProvider,
  IdentityProviderUnavailable,
  type IssuedToken,
  type PasswordCredentials,
  tenantNameFor,
} from "./provider.js";

/** The Keystone user tenantry signs in as to validate other users' tokens. */
export interface KeystoneServiceCredentials {
  username: string;
  password: string;
  /** The service user's domain. Default `Default`. */
  domain?: string;
  /** Project to scope the service token to (Keystone lets its `service` role validate tokens). Default: the user's default project. */
  project?: string;
  /** The project's domain. Default: the user's domain. */
  projectDomain?: string;
}

export interface KeystoneProviderOptions {
  /** The Identity v3 endpoint, e.g. `https://keystone.example.com:5000/v3`. */
  url: string;
  service: KeystoneServiceCredentials;
  /** Roles on the project that make the user its tenant's admin. Default `["admin"]`. */
  adminRoles?: string[];
  /** Per request to Keystone. Default 5000. */
  timeoutMs?: number;
  /**
   * Put before every user name, so Keystone users cannot take the names of other providers' users
   * (as kube-apiserver prefixes OIDC users). Default `keystone:`.
   */
  usernamePrefix?: string;
}

export const DEFAULT_KEYSTONE_USERNAME_PREFIX = "keystone:";

const DEFAULT_DOMAIN = "Default";
/** Keystone's Fernet tokens: URL-safe base64 of a Fernet token, whose version byte 0x80 and timestamp encode as `gAAAAA`. */
const FERNET_TOKEN = /^gAAAAA[A-Za-z0-9_-]+={0,2}$/;
const MIN_TOKEN_LENGTH = 100;
const MAX_TOKEN_LENGTH = 1024;
/** Renew the service token this long before it expires (at most half its lifetime). */
const SERVICE_TOKEN_MARGIN_MS = 5 * 60_000;

interface KeystoneNamed {
  id: string;
  name: string;
}

interface KeystoneToken {
  user: KeystoneNamed & { domain: KeystoneNamed };
  project?: KeystoneNamed & { domain: KeystoneNamed };
  roles: KeystoneNamed[];
  expiresAt: Date;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function named(value: unknown): KeystoneNamed | undefined {
  if (!isRecord(value) || typeof value.id !== "string" || typeof value.name !== "string") return undefined;
  return { id: value.id, name: value.name };
}

function namedInDomain(value: unknown): (KeystoneNamed & { domain: KeystoneNamed }) | undefined {
  const entity = named(value);
  const domain = isRecord(value) ? named(value.domain) : undefined;
  return entity && domain ? { ...entity, domain } : undefined;
}

/** The token in a Keystone `/auth/tokens` answer, or undefined when the body is not one. */
function parseToken(body: unknown): KeystoneToken | undefined {
  if (!isRecord(body) || !isRecord(body.token)) return undefined;
  const { token } = body;
  const user = namedInDomain(token.user);
  const expiresAt = typeof token.expires_at === "string" ? new Date(token.expires_at) : undefined;
  if (!user || !expiresAt || Number.isNaN(expiresAt.getTime())) return undefined;
  const project = token.project === undefined ? undefined : namedInDomain(token.project);
  if (token.project !== undefined && !project) return undefined;
  const roles = Array.isArray(token.roles) ? token.roles.map(named) : [];
  if (roles.some((role) => role === undefined)) return undefined;
  return { user, ...(project ? { project } : {}), roles: roles as KeystoneNamed[], expiresAt };
}

/**
 * Users of an OpenStack cloud, through the Keystone Identity v3 API. tenantry validates a user's
 * token by asking Keystone with a token of its own (a service user's), so revoked tokens stop
 * working as soon as Keystone says so.
 *
 * Identity mapping (project-scoped token):
 * - username: `keystone:` (usernamePrefix) and the Keystone user name; `name@domain` for users
 *   outside the `Default` domain;
 * - uid: the Keystone user id;
 * - groups: `keystone:project:<project name>` and `keystone:role:<role>` for each role the token
 *   carries on its scope (implied roles included, e.g. `admin` brings `member` and `reader`);
 * - tenant: `tenantNameFor(<project name>)`; a token scoped to no project puts the user in no tenant;
 * - tenantAdmin: the token carries one of `adminRoles` on its project.
 */
export class KeystoneIdentityProvider implements IdentityProvider {
  readonly name = "keystone";
  private readonly url: string;
  private readonly adminRoles: ReadonlySet<string>;
  private readonly timeoutMs: number;
  private serviceToken: { token: string; renewAt: number } | undefined;
  private serviceLogin: Promise<string> | undefined;

  constructor(private readonly options: KeystoneProviderOptions) {
    this.url = options.url.replace(/\/+$/, "");
    this.adminRoles = new Set(options.adminRoles ?? ["admin"]);
    this.timeoutMs = options.timeoutMs ?? 5000;
  }

  recognizes(token: string): boolean {
    return token.length >= MIN_TOKEN_LENGTH && token.length <= MAX_TOKEN_LENGTH && FERNET_TOKEN.test(token);
  }

  async authenticate(token: string): Promise<Authentication> {
    if (!this.recognizes(token)) {
      return { authenticated: false, reason: "not a Keystone token (Keystone issues Fernet tokens)" };
    }
    let response = await this.validate(token, await this.currentServiceToken());
    if (response.status === 401) {
      // Our own token expired early or was revoked: sign in afresh once.
      await response.body?.cancel();
      this.serviceToken = undefined;
      response = await this.validate(token, await this.currentServiceToken());
    }
    switch (response.status) {
      case 200:
        return { authenticated: true, identity: this.identityFrom(await this.tokenFrom(response)) };
      case 404:
        // Keystone answers the same for an expired, a revoked and a forged token.
        await response.body?.cancel();
        return {
          authenticated: false,
          reason: "Keystone does not know this token: it is expired, revoked or was never issued",
        };
      case 401:
        throw new IdentityProviderUnavailable(
          `Keystone at ${this.url} refuses the service user ${this.serviceUserName()}'s fresh token: ${await keystoneMessage(response)}`,
        );
      case 403:
        throw new IdentityProviderUnavailable(
          `Keystone at ${this.url} does not let the service user ${this.serviceUserName()} validate tokens: ` +
            "give it the service role on its project",
        );
      default:
        throw new IdentityProviderUnavailable(
          `Keystone at ${this.url} answered ${response.status} validating a token: ${await keystoneMessage(response)}`,
        );
    }
  }

  async login({
    username,
    password,
    domain = DEFAULT_DOMAIN,
    tenant,
  }: PasswordCredentials): Promise<IssuedToken> {
    // Without a scope Keystone scopes the token to the user's default project, if the user has a role there.
    const response = await this.request("POST", "/auth/tokens?nocatalog", {
      body: passwordAuth({ name: username, domain, password }, tenant ? { name: tenant, domain } : undefined),
    });
    if (response.status === 401) {
      await response.body?.cancel();
      throw new AuthenticationError(
        tenant
          ? `Keystone refused the user name or password, or the user has no role on project "${tenant}"`
          : "Keystone refused the user name or password",
      );
    }
    if (response.status === 400) {
      throw new AuthenticationError(`Keystone refused the login: ${await keystoneMessage(response)}`);
    }
    if (response.status !== 201) {
      throw new IdentityProviderUnavailable(
        `Keystone at ${this.url} answered ${response.status} to a login: ${await keystoneMessage(response)}`,
      );
    }
    const token = this.subjectToken(response);
    const issued = await this.tokenFrom(response);
    return { token, expiresAt: issued.expiresAt, identity: this.identityFrom(issued) };
  }

  async revoke(token: string): Promise<void> {
    if (!this.recognizes(token)) return;
    // Keystone lets a token's own user revoke it, while the service role may only validate.
    const response = await this.request("DELETE", "/auth/tokens", {
      headers: { "X-Auth-Token": token, "X-Subject-Token": token },
    });
    await response.body?.cancel();
    // 401 and 404: the token is no longer valid already.
    if (response.ok || response.status === 401 || response.status === 404) return;
    throw new IdentityProviderUnavailable(
      `Keystone at ${this.url} answered ${response.status} to a revocation`,
    );
  }

  private identityFrom(token: KeystoneToken): Identity {
    const { user, project, roles } = token;
    const roleNames = roles.map((role) => role.name);
    const groups = [
      ...(project ? [`keystone:project:${project.name}`] : []),
      ...roleNames.map((role) => `keystone:role:${role}`),
    ];
    return {
      username: `${this.options.usernamePrefix ?? DEFAULT_KEYSTONE_USERNAME_PREFIX}${user.domain.name === DEFAULT_DOMAIN ? user.name : `${user.name}@${user.domain.name}`}`,
      uid: user.id,
      groups,
      ...(project ? { tenant: tenantNameFor(project.name) } : {}),
      tenantAdmin: project !== undefined && roleNames.some((role) => this.adminRoles.has(role)),
      expiresAt: token.expiresAt,
      provider: this.name,
    };
  }

  private validate(token: string, serviceToken: string): Promise<Response> {
    return this.request("GET", "/auth/tokens?nocatalog", {
      headers: { "X-Auth-Token": serviceToken, "X-Subject-Token": token },
    });
  }

  private async currentServiceToken(): Promise<string> {
    if (this.serviceToken && Date.now() < this.serviceToken.renewAt) return this.serviceToken.token;
    // Concurrent validations share one sign-in.
    this.serviceLogin ??= this.signIn().finally(() => {
      this.serviceLogin = undefined;
    });
    return this.serviceLogin;
  }

  private async signIn(): Promise<string> {
    const {
      username,
      password,
      domain = DEFAULT_DOMAIN,
      project,
      projectDomain = domain,
    } = this.options.service;
    const response = await this.request("POST", "/auth/tokens?nocatalog", {
      body: passwordAuth(
        { name: username, domain, password },
        project ? { name: project, domain: projectDomain } : undefined,
      ),
    });
    if (response.status === 401) {
      await response.body?.cancel();
      throw new IdentityProviderUnavailable(
        `Keystone at ${this.url} refused the service user ${this.serviceUserName()}` +
          `${project ? ` on project "${project}"` : ""}: check the Keystone service credentials tenantry is configured with`,
      );
    }
    if (response.status !== 201) {
      throw new IdentityProviderUnavailable(
        `Keystone at ${this.url} answered ${response.status} to the service user's login: ${await keystoneMessage(response)}`,
      );
    }
    const token = this.subjectToken(response);
    const { expiresAt } = await this.tokenFrom(response);
    const margin = Math.min(SERVICE_TOKEN_MARGIN_MS, (expiresAt.getTime() - Date.now()) / 2);
    this.serviceToken = { token, renewAt: expiresAt.getTime() - margin };
    return token;
  }

  private subjectToken(response: Response): string {
    const token = subjectTokenOf(response);
    if (!token) {
      throw new IdentityProviderUnavailable(`Keystone at ${this.url} issued a token without X-Subject-Token`);
    }
    return token;
  }

  private async tokenFrom(response: Response): Promise<KeystoneToken> {
    let body: unknown;
    try {
      body = await response.json();
    } catch (error) {
      throw new IdentityProviderUnavailable(
        `Keystone at ${this.url} sent an unreadable token: ${describeFailure(error, this.timeoutMs)}`,
      );
    }
    const token = parseToken(body);
    if (!token) {
      throw new IdentityProviderUnavailable(
        `Keystone at ${this.url} sent a token without user, project or expiry it should have`,
      );
    }
    return token;
  }

  private async request(
    method: string,
    path: string,
    { headers = {}, body }: { headers?: Record<string, string>; body?: unknown },
  ): Promise<Response> {
    try {
      return await keystoneFetch(`${this.url}${path}`, { method, headers, body, timeoutMs: this.timeoutMs });
    } catch (error) {
      throw new IdentityProviderUnavailable(
        `Keystone at ${this.url} could not be reached (${method} ${path.replace(/\?.*/, "")}): ${(error as Error).message}`,
      );
    }
  }

  private serviceUserName(): string {
    const { username, domain = DEFAULT_DOMAIN } = this.options.service;
    return `"${username}" (domain "${domain}")`;
  }
}
