import type { AddressInfo } from "node:net";
import swagger from "@fastify/swagger";
import type { V1LabelSelector, V1RuleWithOperations } from "@kubernetes/client-node";
import Fastify, { type FastifyInstance, type FastifyReply } from "fastify";
import type { Logger } from "pino";
import {
  API_SERVER_KEEP_ALIVE_MS,
  drainingServerOptions,
  echoRequestId,
  type GracefulClose,
  gracefulClose,
  ProblemError,
  problemServerOptions,
  replaceServingCertificate,
  replyProblem,
  requestIdOptions,
  serveProblems,
} from "../common/index.js";
import { type AdmissionDecision, type AdmissionRequest, toReviewResponse } from "./review.js";
import {
  type AdmissionReviewRequest,
  AdmissionReviewRequestSchema,
  AdmissionReviewResponseSchema,
  ProblemSchema,
} from "./schema.js";
import type { WebhookTls } from "./tls.js";

/** Where the webhook server serves the OpenAPI document of its webhooks. */
export const OPENAPI_PATH = "/openapi.json";

/** AdmissionReviews carry whole objects (and their old versions): allow what etcd allows and more. */
const BODY_LIMIT = 8 * 1024 * 1024;

function problem(reply: FastifyReply, status: number, title: string, detail: string) {
  return replyProblem(reply, new ProblemError(status, title, detail));
}

/**
 * What kube-apiserver always sends and webhooks rely on: an operation the webhook's rules
 * intercept, the object for CREATE and UPDATE (and the connect options for CONNECT), the stored
 * object for UPDATE and DELETE. Anything else is a 400 naming the field, never a handler's crash.
 */
export function malformedReview(
  webhook: Pick<AdmissionWebhook, "rules">,
  request: AdmissionReviewRequest["request"],
): string | undefined {
  const { operation } = request;
  const intercepted = new Set(webhook.rules.flatMap((rule) => rule.operations ?? []));
  if (!intercepted.has("*") && !intercepted.has(operation))
    return `request.operation: ${operation} is not intercepted by this webhook (${[...intercepted].sort().join(", ")})`;
  if (operation !== "DELETE" && !request.object) return `request.object: required for ${operation}`;
  if ((operation === "UPDATE" || operation === "DELETE") && !request.oldObject)
    return `request.oldObject: required for ${operation}`;
  return undefined;
}

/** One admission webhook: where it is served, what it intercepts, and how it decides. */
export interface AdmissionWebhook {
  /** Fully qualified webhook name, e.g. `namespaces.tenants.tenantry.dev`. */
  name: string;
  kind: "mutating" | "validating";
  /** Path on the webhook server, e.g. `/mutate/namespaces`. */
  path: string;
  rules: V1RuleWithOperations[];
  /**
   * `Fail` where letting a request through would break isolation; `Ignore` where the webhook only
   * adds convenience, so an outage degrades instead of blocking.
   */
  failurePolicy: "Fail" | "Ignore";
  namespaceSelector?: V1LabelSelector;
  objectSelector?: V1LabelSelector;
  /**
   * CEL expressions (all must hold) that decide, in the API server, whether a request is sent at
   * all: a `Fail` webhook that only a few requests need then blocks only those while it is down.
   */
  matchConditions?: { name: string; expression: string }[];
  timeoutSeconds?: number;
  /** `NoneOnDryRun` for webhooks that write (reservations) except on dry runs; default `None`. */
  sideEffects?: "None" | "NoneOnDryRun";
  handle(request: AdmissionRequest): Promise<AdmissionDecision> | AdmissionDecision;
}

export interface WebhookServerOptions {
  tls: WebhookTls;
  host?: string;
  port?: number;
  logger?: Logger;
}

/** Serves admission webhooks over TLS; the serving certificate can be swapped without a restart. */
export class WebhookServer {
  private readonly app: FastifyInstance;
  private readonly webhooks = new Map<string, AdmissionWebhook>();
  private address?: AddressInfo;
  private readonly closing: GracefulClose;

  constructor(private readonly options: WebhookServerOptions) {
    this.app = Fastify({
      ...problemServerOptions({ bodyLimit: BODY_LIMIT }),
      https: { cert: options.tls.serving.certPem, key: options.tls.serving.keyPem },
      // One log line per admission request would drown everything else; keep warnings and errors.
      ...(options.logger
        ? { loggerInstance: options.logger.child({ component: "webhooks" }, { level: "warn" }) }
        : {}),
      // Stopping answers the requests in flight (see gracefulClose).
      ...drainingServerOptions,
      keepAliveTimeout: API_SERVER_KEEP_ALIVE_MS,
      ...requestIdOptions(),
    }) as unknown as FastifyInstance;
    echoRequestId(this.app);
    this.closing = gracefulClose(this.app, "admission requests", options.logger);
    this.app.register(swagger, {
      openapi: {
        info: {
          title: "tenantry admission webhooks",
          version: "v1",
          description:
            "kube-apiserver's admission webhooks: each path takes an admission.k8s.io/v1 AdmissionReview and answers one (JSON Patch for mutating webhooks). A body that is not a well-formed AdmissionReview is a 400 naming the field.",
        },
      },
    });
    serveProblems(this.app, { bodyLimit: BODY_LIMIT, what: "webhook request" });
    this.app.get("/healthz", { schema: { hide: true } }, async () => "ok");
    this.app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => this.app.swagger());
  }

  register(webhook: AdmissionWebhook): void {
    if (this.webhooks.has(webhook.path)) throw new Error(`webhook path ${webhook.path} is registered twice`);
    this.webhooks.set(webhook.path, webhook);
    // Inside a plugin, so that the OpenAPI document (registered first) sees the route.
    this.app.register(async (scope) => {
      scope.post(
        webhook.path,
        {
          schema: {
            summary: webhook.name,
            description: `${webhook.kind === "mutating" ? "Mutating" : "Validating"} webhook ${webhook.name}.`,
            body: AdmissionReviewRequestSchema,
            response: { 200: AdmissionReviewResponseSchema, 400: ProblemSchema, 500: ProblemSchema },
          },
        },
        async (request, reply) => {
          const review = request.body as AdmissionReviewRequest;
          const malformed = malformedReview(webhook, review.request);
          if (malformed) return problem(reply, 400, "not an AdmissionReview", malformed);
          try {
            const decision = await webhook.handle(review.request as AdmissionRequest);
            return toReviewResponse(review.request.uid, decision);
          } catch (err) {
            // A 500 lets the API server apply the webhook's failurePolicy.
            request.log.error(
              { err, webhook: webhook.name, uid: review.request.uid, operation: review.request.operation },
              "webhook handler failed",
            );
            return problem(reply, 500, "webhook failed", (err as Error).message);
          }
        },
      );
    });
  }

  get registered(): AdmissionWebhook[] {
    return [...this.webhooks.values()];
  }

  async start(): Promise<string> {
    await this.app.listen({ host: this.options.host ?? "127.0.0.1", port: this.options.port ?? 0 });
    this.address = this.app.server.address() as AddressInfo;
    return this.url;
  }

  get url(): string {
    if (!this.address) throw new Error("webhook server is not started");
    const host = this.address.family === "IPv6" ? `[${this.address.address}]` : this.address.address;
    return `https://${host}:${this.address.port}`;
  }

  /** New connections use the new certificate; connections already open finish with the old one. */
  rotate(tls: WebhookTls): void {
    replaceServingCertificate(this.app.server, tls.serving);
  }

  /** Admission requests being answered now. */
  get pending(): number {
    return this.closing.pending;
  }

  /** About to stop: see {@link GracefulClose.drain}. */
  drain(): void {
    this.closing.drain();
  }

  /** Answers the admission requests already received, then stops (see {@link GracefulClose.close}). */
  stop(drainTimeoutMs?: number): Promise<void> {
    return this.closing.close(drainTimeoutMs);
  }
}
