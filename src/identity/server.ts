import type { TLSSocket } from "node:tls";
import swagger from "@fastify/swagger";
import { type Static, Type } from "@sinclair/typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { Counter, Histogram, type Registry } from "prom-client";
import {
  API_SERVER_KEEP_ALIVE_MS,
  HttpServer,
  ProblemError,
  ProblemSchema,
  replyProblem,
} from "../common/index.js";
import { DEFAULT_API_AUDIENCES, reviewAudiences } from "./audiences.js";
import type { Authenticator } from "./authenticator.js";
import type { BuiltinIdentity } from "./builtin/builtin-identity.js";
import { kubernetesUserOf } from "./kubernetes-user.js";
import { LoginThrottle, type LoginThrottleOptions } from "./login-throttle.js";
import { AuthenticationError, type Identity, IdentityProviderUnavailable } from "./providers/provider.js";
import type { TenantProvisioner } from "./provisioning.js";

export const AUTHENTICATE_PATH = "/authenticate";
export const AUTHORIZE_PATH = "/authorize";
export const LOGIN_PATH = "/identity/v1/login";
export const LOGOUT_PATH = "/identity/v1/logout";
export const WHOAMI_PATH = "/identity/v1/whoami";
export const JWKS_PATH = "/openid/v1/jwks";
export const DISCOVERY_PATH = "/.well-known/openid-configuration";
/** Reviews and logins are small: a SubjectAccessReview with every extra is well under this. */
const BODY_LIMIT = 1024 * 1024;

/** A SubjectAccessReview answer: `allow`, `deny` (final) or `none` (the next authorizer decides). */
export type AuthorizeFunction = (
  spec: Record<string, unknown>,
) => Promise<{ decision: "allow" | "deny" | "none"; reason: string }>;

export interface AccessServerOptions {
  tls: { certPem: string; keyPem: string };
  /**
   * CA of the client certificate kube-apiserver presents (its webhook kubeconfig's user): only a
   * caller with a certificate from it gets answers from /authenticate and /authorize. Absent: those
   * two answer nobody.
   */
  reviewClientCaPem?: string;
  host?: string;
  port?: number;
  authenticator: Authenticator;
  /** Puts users in their tenant at first login (TokenReview); absent: nobody is provisioned. */
  provisioner?: TenantProvisioner;
  /** Serves password login, logout and the JWKS when set. */
  builtin?: BuiltinIdentity;
  authorize?: AuthorizeFunction;
  /** The Kubernetes API's audiences (kube-apiserver's --api-audiences); tokens are meant for them too. */
  apiAudiences?: readonly string[];
  /** How wrong passwords are slowed: per user and client, per client, and (much later) per user. */
  loginThrottle?: LoginThrottleOptions;
  /** The namespaces of a tenant, told to a user at login (waits briefly for a tenant created just now). */
  namespacesOf?: (tenant: string) => Promise<string[]>;
  logger?: Logger;
  registry?: Registry;
}

const LoginBody = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 256 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
    provider: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    domain: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    tenant: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  },
  { additionalProperties: false },
);
type LoginBody = Static<typeof LoginBody>;

/** Where the access server serves its OpenAPI document. */
export const OPENAPI_PATH = "/identity/v1/openapi.json";

const Text = (description: string, maxLength = 1024) => Type.String({ description, maxLength });

/** authentication.k8s.io/v1 TokenReview, as kube-apiserver's token webhook sends it. */
const TokenReviewBody = Type.Object(
  {
    apiVersion: Type.Optional(Text("authentication.k8s.io/v1 (or v1beta1).", 64)),
    kind: Type.Optional(Text("TokenReview.", 64)),
    spec: Type.Object({
      token: Type.String({ description: "The bearer token to review.", maxLength: 16384 }),
      audiences: Type.Optional(
        Type.Array(Text("An audience the token should be meant for.", 1024), { maxItems: 64 }),
      ),
    }),
  },
  { description: "A TokenReview from kube-apiserver's token authentication webhook." },
);

const ResourceAttributes = Type.Object(
  {
    namespace: Type.Optional(Text("Namespace; empty for cluster-scoped resources or all namespaces.", 253)),
    verb: Type.Optional(Text("get, list, create, update, delete, … or *.", 64)),
    group: Type.Optional(Text("API group.", 253)),
    version: Type.Optional(Text("API version.", 64)),
    resource: Type.Optional(Text("Resource, e.g. pods.", 253)),
    subresource: Type.Optional(Text("Subresource, e.g. log.", 253)),
    name: Type.Optional(Text("Object name.", 253)),
  },
  { description: "A request for a resource.", additionalProperties: true },
);

/** authorization.k8s.io/v1 SubjectAccessReview, as kube-apiserver's authorization webhook sends it. */
const SubjectAccessReviewBody = Type.Object(
  {
    apiVersion: Type.Optional(Text("authorization.k8s.io/v1 (or v1beta1).", 64)),
    kind: Type.Optional(Text("SubjectAccessReview.", 64)),
    spec: Type.Object(
      {
        resourceAttributes: Type.Optional(ResourceAttributes),
        nonResourceAttributes: Type.Optional(
          Type.Object(
            { path: Type.Optional(Text("URL path.", 4096)), verb: Type.Optional(Text("HTTP verb.", 64)) },
            { description: "A request for a non-resource URL." },
          ),
        ),
        user: Type.Optional(Text("Who asks.", 1024)),
        groups: Type.Optional(Type.Array(Text("A group.", 1024), { maxItems: 256 })),
        extra: Type.Optional(
          Type.Record(
            Type.String({ maxLength: 1024 }),
            Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 64 }),
          ),
        ),
        uid: Type.Optional(Text("The user's uid.", 1024)),
      },
      { description: "The request to decide." },
    ),
  },
  { description: "A SubjectAccessReview from kube-apiserver's authorization webhook." },
);

const Problem = ProblemSchema;
const Answer = (description: string) => Type.Object({}, { description, additionalProperties: true });
const BearerHeader = Type.Object({
  authorization: Type.Optional(Type.String({ description: "`Bearer <token>`.", maxLength: 16384 })),
});

/** RFC 9457 problem details: what every REST error of tenantry looks like. */
function problem(reply: FastifyReply, status: number, title: string, detail: string) {
  return replyProblem(reply, new ProblemError(status, title, detail));
}

function bearer(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)$/i.exec(header ?? "");
  return match?.[1];
}

/**
 * One HTTPS endpoint for everything about who users are and what they may do: kube-apiserver's
 * token (TokenReview) and authorization (SubjectAccessReview) webhooks, and the identity REST API
 * (login, logout, whoami) with the OIDC discovery document and signing keys of the built-in issuer.
 */
export class AccessServer {
  private readonly shell: HttpServer & { app: FastifyInstance };

  constructor(private readonly options: AccessServerOptions) {
    const registry = options.registry;
    const throttle = new LoginThrottle(options.loginThrottle);
    const reviews = registry
      ? new Counter({
          name: "tenantry_token_reviews_total",
          help: "TokenReviews answered, by result and identity provider.",
          labelNames: ["result", "provider"],
          registers: [registry],
        })
      : undefined;
    const latency = registry
      ? new Histogram({
          name: "tenantry_access_review_duration_seconds",
          help: "Time to answer a TokenReview or SubjectAccessReview.",
          labelNames: ["review"],
          buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
          registers: [registry],
        })
      : undefined;

    const { reviewClientCaPem } = options;
    this.shell = HttpServer.fastify({
      what: "access server",
      host: options.host ?? "127.0.0.1",
      port: options.port ?? 0,
      // Client certificates are asked of every caller, required only by the review endpoints (per route).
      tls: { ...options.tls, ...(reviewClientCaPem ? { clientCaPem: reviewClientCaPem } : {}) },
      bodyLimit: BODY_LIMIT,
      ...(options.logger ? { logger: options.logger.child({ component: "access-server" }) } : {}),
      logLevel: "warn",
      // kube-apiserver denies a request whose review is cut: stopping answers those in flight.
      inFlight: "answer",
      // kube-apiserver's webhook clients keep connections: let them close idle ones first.
      keepAliveTimeoutMs: API_SERVER_KEEP_ALIVE_MS,
      fastify: { ajv: { customOptions: { allErrors: false } } },
    });
    const server = this.shell.app;

    server.register(swagger, {
      openapi: {
        info: {
          title: "tenantry identity and access",
          version: "v1",
          description:
            "Password login, logout and whoami of tenantry's identity service, the OIDC discovery document and signing keys of its issuer, and kube-apiserver's token (TokenReview) and authorization (SubjectAccessReview) webhooks, which answer only kube-apiserver's webhook client certificate.",
        },
        components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
      },
    });
    // Inside a plugin, so that the OpenAPI document (registered first) sees every route.
    server.register(async (app) => {
      app.get("/healthz", { schema: { hide: true } }, async () => "ok");
      app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => server.swagger());

      this.reviewRoutes(app, reviews, latency);
      this.loginRoutes(app, throttle);
      this.tokenRoutes(app);
      this.issuerRoutes(app);
    });
  }

  /** kube-apiserver's token (TokenReview) and authorization (SubjectAccessReview) webhooks. */
  private reviewRoutes(app: FastifyInstance, reviews?: Counter<string>, latency?: Histogram<string>): void {
    const { options } = this;
    // kube-apiserver alone may ask: a review answers who a token belongs to and what anyone may do.
    const fromApiServer = async (request: FastifyRequest, reply: FastifyReply) => {
      const socket = request.raw.socket as TLSSocket;
      if (!options.reviewClientCaPem || !socket.authorized) {
        return problem(
          reply,
          401,
          "client certificate required",
          "reviews are answered only to kube-apiserver's webhook client certificate",
        );
      }
    };

    app.post(
      AUTHENTICATE_PATH,
      {
        schema: {
          summary: "TokenReview (kube-apiserver's token webhook)",
          body: TokenReviewBody,
          response: {
            200: Answer("The TokenReview with its status."),
            401: Problem,
            500: Answer(
              "The identity provider could not be asked: a TokenReview saying so, not to be cached.",
            ),
          },
        },
        preHandler: fromApiServer,
      },
      async (request, reply) => {
        const end = latency?.startTimer({ review: "token" });
        const { spec } = request.body as Static<typeof TokenReviewBody>;
        try {
          const result = await options.authenticator.authenticate(spec.token);
          if (!result.authenticated) {
            reviews?.inc({ result: "refused", provider: "" });
            return tokenReview({ authenticated: false, error: result.reason });
          }
          const audiences = reviewAudiences(
            result.identity,
            spec.audiences,
            options.apiAudiences ?? DEFAULT_API_AUDIENCES,
          );
          if (!audiences.valid) {
            reviews?.inc({ result: "refused", provider: result.identity.provider });
            return tokenReview({ authenticated: false, error: audiences.reason });
          }
          await options.provisioner?.ensure(result.identity);
          reviews?.inc({ result: "authenticated", provider: result.identity.provider });
          return tokenReview({
            authenticated: true,
            user: kubernetesUserOf(result.identity),
            ...(audiences.audiences ? { audiences: audiences.audiences } : {}),
          });
        } catch (err) {
          reviews?.inc({ result: "error", provider: "" });
          // A 500 keeps kube-apiserver from caching a "no" that is only an outage.
          request.log.warn({ err }, "token review failed");
          return reply.code(500).send(tokenReview({ authenticated: false, error: (err as Error).message }));
        } finally {
          end?.();
        }
      },
    );

    const authorize = options.authorize;
    if (authorize) {
      app.post(
        AUTHORIZE_PATH,
        {
          schema: {
            summary: "SubjectAccessReview (kube-apiserver's authorization webhook)",
            body: SubjectAccessReviewBody,
            response: { 200: Answer("The SubjectAccessReview with its status."), 401: Problem },
          },
          preHandler: fromApiServer,
        },
        async (request) => {
          const end = latency?.startTimer({ review: "access" });
          try {
            const { spec } = request.body as Static<typeof SubjectAccessReviewBody>;
            const { decision, reason } = await authorize(spec);
            return {
              apiVersion: "authorization.k8s.io/v1",
              kind: "SubjectAccessReview",
              status: {
                allowed: decision === "allow",
                ...(decision === "deny" ? { denied: true } : {}),
                ...(reason ? { reason } : {}),
              },
            };
          } finally {
            end?.();
          }
        },
      );
    }
  }

  /** Password login, throttled per user and address. */
  private loginRoutes(app: FastifyInstance, throttle: LoginThrottle): void {
    const { options } = this;
    const loginSchema = {
      summary: "Log in with a user name and password; answers a token",
      body: LoginBody,
      response: {
        200: Answer("The token, its expiry, who the user is and their tenant's namespaces."),
        400: Problem,
        401: Problem,
        429: Problem,
        503: Problem,
      },
    };
    app.post(LOGIN_PATH, { schema: loginSchema }, async (request, reply) => {
      const body = request.body as LoginBody;
      const providerName = body.provider ?? options.builtin?.name ?? options.authenticator.providers[0]?.name;
      const provider = providerName ? options.authenticator.provider(providerName) : undefined;
      if (!provider?.login) {
        const names = options.authenticator.providers.filter((p) => p.login).map((p) => p.name);
        return problem(
          reply,
          400,
          "invalid request",
          `provider "${providerName ?? ""}" takes no passwords; use one of: ${names.join(", ") || "(none)"}`,
        );
      }
      const throttleKey = `${provider.name}:${body.domain ? `${body.domain}/` : ""}${body.username}`;
      // A built-in user's lock is lifted by `tenantry user unlock` (its User's status says when).
      const unlockedAt =
        options.builtin && provider.name === options.builtin.name
          ? options.builtin.loginsUnlockedAt(body.username)
          : 0;
      const verdict = throttle.check(throttleKey, request.ip, unlockedAt);
      if (!verdict.allowed) {
        reply.header("retry-after", String(verdict.retryAfterSeconds));
        return problem(reply, 429, "too many login attempts", verdict.reason);
      }
      try {
        const issued = await provider.login({
          username: body.username,
          password: body.password,
          ...(body.domain ? { domain: body.domain } : {}),
          ...(body.tenant ? { tenant: body.tenant } : {}),
        });
        throttle.succeeded(throttleKey, request.ip);
        await options.provisioner?.ensure(issued.identity);
        const tenant = issued.identity.tenant;
        return {
          token: issued.token,
          expiresAt: issued.expiresAt.toISOString(),
          ...describeIdentity(issued.identity),
          namespaces: tenant && options.namespacesOf ? await options.namespacesOf(tenant) : [],
        };
      } catch (err) {
        if (err instanceof AuthenticationError) {
          throttle.failed(throttleKey, request.ip, unlockedAt);
          return problem(reply, 401, "login refused", err.message);
        }
        if (err instanceof IdentityProviderUnavailable)
          return problem(reply, 503, "identity provider unavailable", err.message);
        throw err;
      }
    });
  }

  /** Logout and whoami, with the caller's own token. */
  private tokenRoutes(app: FastifyInstance): void {
    const { options } = this;
    const bearerSecurity = [{ bearer: [] }];
    app.post(
      LOGOUT_PATH,
      {
        schema: {
          summary: "Revoke the token the request carries",
          headers: BearerHeader,
          security: bearerSecurity,
          response: { 204: Type.Null({ description: "Revoked." }), 400: Problem, 401: Problem },
        },
      },
      async (request, reply) => {
        const token = bearer(request.headers.authorization);
        if (!token)
          return problem(
            reply,
            401,
            "not logged in",
            "send the token to revoke as `Authorization: Bearer <token>`",
          );
        const provider = options.authenticator.providers.find((p) => p.recognizes(token));
        if (!provider?.revoke)
          return problem(reply, 400, "cannot revoke", "this token's provider has no revocation");
        try {
          await provider.revoke(token);
        } catch (err) {
          if (err instanceof AuthenticationError) return problem(reply, 401, "not logged in", err.message);
          throw err;
        }
        options.authenticator.forget();
        return reply.code(204).send();
      },
    );

    app.get(
      WHOAMI_PATH,
      {
        schema: {
          summary: "Who the token the request carries belongs to",
          headers: BearerHeader,
          security: bearerSecurity,
          response: { 200: Answer("The user, their groups and tenant."), 401: Problem },
        },
      },
      async (request, reply) => {
        const token = bearer(request.headers.authorization);
        if (!token)
          return problem(reply, 401, "not logged in", "send a token as `Authorization: Bearer <token>`");
        const result = await options.authenticator.authenticate(token);
        if (!result.authenticated) return problem(reply, 401, "not logged in", result.reason);
        return describeIdentity(result.identity);
      },
    );
  }

  /** The built-in issuer's OIDC discovery document and signing keys. */
  private issuerRoutes(app: FastifyInstance): void {
    const { options } = this;
    const builtin = options.builtin;
    if (builtin) {
      app.get(
        DISCOVERY_PATH,
        {
          schema: {
            summary: "OIDC discovery document of the built-in issuer",
            response: { 200: Answer("The discovery document.") },
          },
        },
        async () => ({
          issuer: builtin.issuer,
          jwks_uri: `${builtin.issuer}${JWKS_PATH}`,
          response_types_supported: ["id_token"],
          subject_types_supported: ["public"],
          id_token_signing_alg_values_supported: ["ES256"],
          claims_supported: [
            "sub",
            "iss",
            "aud",
            "exp",
            "iat",
            "jti",
            "preferred_username",
            "groups",
            "tenant",
            "tenant_admin",
          ],
        }),
      );
      app.get(
        JWKS_PATH,
        {
          schema: {
            summary: "The built-in issuer's signing keys",
            response: { 200: Answer("A JWK Set.") },
          },
        },
        async (_request, reply) => {
          await builtin.keys.refresh(60_000);
          return reply.header("cache-control", "max-age=60").send(builtin.jwks());
        },
      );
    }
  }

  start(): Promise<string> {
    return this.shell.listen();
  }

  get url(): string {
    return this.shell.url;
  }

  /** A renewed serving certificate: new connections get it, without a restart. */
  rotate(pair: { certPem: string; keyPem: string }): void {
    this.shell.replaceCertificate(pair);
  }

  /** About to stop: see {@link HttpServer.drain}. */
  drain(): void {
    this.shell.drain();
  }

  /** Answers the reviews and requests already received, then stops. */
  stop(): Promise<void> {
    return this.shell.close();
  }
}

function tokenReview(status: Record<string, unknown>) {
  return { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", status };
}

function describeIdentity(identity: Identity) {
  const user = kubernetesUserOf(identity);
  return {
    username: user.username,
    uid: user.uid,
    groups: user.groups,
    ...(identity.tenant ? { tenant: identity.tenant } : {}),
    tenantAdmin: identity.tenantAdmin,
    provider: identity.provider,
    ...(identity.expiresAt ? { expiresAt: identity.expiresAt.toISOString() } : {}),
  };
}
