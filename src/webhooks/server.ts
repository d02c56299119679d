import type { TLSSocket } from "node:tls";
import swagger from "@fastify/swagger";
import type { V1LabelSelector, V1RuleWithOperations } from "@kubernetes/client-node";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { Counter, type Registry } from "prom-client";
import { API_SERVER_KEEP_ALIVE_MS, HttpServer, ProblemError, replyProblem } from "../common/index.js";
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

/** One admission webhook entry: where it is served, what it intercepts, and how it decides. */
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
  /**
   * Sent for requests in every namespace (kube-system and tenantry's own too) and from every
   * requester, failing as failurePolicy says, where other webhooks exempt the cluster's own: for a
   * guard whose matchConditions pick only what tenantry must decide even of a cluster identity (a
   * worker node's kubelet) and whose outage only delays it.
   */
  everywhere?: boolean;
  /** `NoneOnDryRun` for webhooks that write (reservations) except on dry runs; default `None`. */
  sideEffects?: "None" | "NoneOnDryRun";
  /**
   * Mutating only; default `IfNeeded`, so that a webhook of its own sees what later ones changed.
   * The dispatcher's shared entries say `Never`: their checks already ran in turn on one object.
   */
  reinvocationPolicy?: "Never" | "IfNeeded";
  handle(request: AdmissionRequest): Promise<AdmissionDecision> | AdmissionDecision;
}

/**
 * Who may send admission reviews. kube-apiserver presents a client certificate to webhooks when its
 * `--admission-control-config-file` gives it one (a WebhookAdmissionConfiguration kubeconfig):
 * `clientCaPem` is the CA bundle that signed it, and every other caller gets a 401 — a forged
 * review must not reserve quota or create bootstrap tokens. `anyone` is for a control plane that
 * cannot present a certificate (a managed one), where only the network keeps others out.
 */
export type WebhookCallers = { clientCaPem: string } | "anyone";

export interface WebhookServerOptions {
  tls: WebhookTls;
  callers: WebhookCallers;
  host?: string;
  port?: number;
  logger?: Logger;
  /** Where `tenantry_admission_refused_callers_total` is counted. */
  registry?: Registry;
}

/** Serves admission webhooks over TLS; the serving certificate can be swapped without a restart. */
export class WebhookServer {
  private readonly shell: HttpServer & { app: FastifyInstance };
  private readonly webhooks = new Map<string, AdmissionWebhook>();
  private readonly refused?: Counter<"reason">;

  constructor(private readonly options: WebhookServerOptions) {
    const clientCaPem = this.clientCaPem;
    this.shell = HttpServer.fastify({
      what: "admission webhooks",
      host: options.host ?? "127.0.0.1",
      port: options.port ?? 0,
      // A caller without a client certificate gets a 401 saying why (and /healthz stays open to probes).
      tls: { ...options.tls.serving, ...(clientCaPem ? { clientCaPem } : {}) },
      bodyLimit: BODY_LIMIT,
      ...(options.logger ? { logger: options.logger.child({ component: "webhooks" }) } : {}),
      // One log line per admission request would drown everything else; keep warnings and errors.
      logLevel: "warn",
      // kube-apiserver denies a request whose review is cut: stopping answers those in flight.
      inFlight: "answer",
      keepAliveTimeoutMs: API_SERVER_KEEP_ALIVE_MS,
    });
    const { app } = this.shell;
    if (options.registry) {
      this.refused = new Counter({
        name: "tenantry_admission_refused_callers_total",
        help: "Admission requests refused with 401 because the caller did not present kube-apiserver's webhook client certificate, by reason.",
        labelNames: ["reason"],
        registers: [options.registry],
      });
    }
    if (!clientCaPem)
      options.logger?.warn(
        "admission webhooks answer any caller: nothing but the network keeps forged AdmissionReviews out (give the CA of kube-apiserver's webhook client certificate)",
      );
    app.register(swagger, {
      openapi: {
        info: {
          title: "tenantry admission webhooks",
          version: "v1",
          description:
            "kube-apiserver's admission webhooks: each path takes an admission.k8s.io/v1 AdmissionReview and answers one (JSON Patch for mutating webhooks). Only kube-apiserver's webhook client certificate is answered; any other caller gets a 401. A body that is not a well-formed AdmissionReview is a 400 naming the field.",
        },
      },
    });
    app.get("/healthz", { schema: { hide: true } }, async () => "ok");
    app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
  }

  register(webhook: AdmissionWebhook): void {
    if (this.webhooks.has(webhook.path)) throw new Error(`webhook path ${webhook.path} is registered twice`);
    this.webhooks.set(webhook.path, webhook);
    // Inside a plugin, so that the OpenAPI document (registered first) sees the route.
    this.shell.app.register(async (scope) => {
      scope.post(
        webhook.path,
        {
          schema: {
            summary: webhook.name,
            description: `${webhook.kind === "mutating" ? "Mutating" : "Validating"} webhook ${webhook.name}.`,
            body: AdmissionReviewRequestSchema,
            response: {
              200: AdmissionReviewResponseSchema,
              400: ProblemSchema,
              401: ProblemSchema,
              500: ProblemSchema,
            },
          },
          // Before the body is even read: nothing of a forged review reaches a handler.
          onRequest: (request, reply) => this.authenticateCaller(request, reply),
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

  private get clientCaPem(): string | undefined {
    return this.options.callers === "anyone" ? undefined : this.options.callers.clientCaPem;
  }

  /**
   * The one place that decides who may send admission reviews: the caller's TLS client
   * certificate must chain to the CA of kube-apiserver's webhook client certificate.
   */
  private async authenticateCaller(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!this.clientCaPem) return;
    const socket = request.raw.socket as TLSSocket;
    if (socket.authorized) return;
    const presented = Object.keys(socket.getPeerCertificate() ?? {}).length > 0;
    this.refused?.inc({ reason: presented ? "untrusted-certificate" : "no-certificate" });
    await problem(
      reply,
      401,
      "client certificate required",
      presented
        ? `the client certificate is not kube-apiserver's webhook client certificate (${socket.authorizationError ?? "not trusted"}): admission reviews are answered only to kube-apiserver`
        : "no client certificate: admission reviews are answered only to kube-apiserver's webhook client certificate (its --admission-control-config-file)",
    );
  }

  get registered(): AdmissionWebhook[] {
    return [...this.webhooks.values()];
  }

  start(): Promise<string> {
    return this.shell.listen();
  }

  get url(): string {
    return this.shell.url;
  }

  /** New connections use the new certificate; connections already open finish with the old one. */
  rotate(tls: WebhookTls): void {
    this.shell.replaceCertificate(tls.serving);
  }

  /** Admission requests being answered now. */
  get pending(): number {
    return this.shell.pending;
  }

  /** About to stop: see {@link HttpServer.drain}. */
  drain(): void {
    this.shell.drain();
  }

  /** Answers the admission requests already received, then stops (see {@link HttpServer.close}). */
  stop(drainTimeoutMs?: number): Promise<void> {
    return this.shell.close(drainTimeoutMs);
  }
}
