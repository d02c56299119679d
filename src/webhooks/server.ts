import type { AddressInfo } from "node:net";
import type { V1LabelSelector, V1RuleWithOperations } from "@kubernetes/client-node";
import Fastify, { type FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { type AdmissionDecision, type AdmissionRequest, toReviewResponse } from "./review.js";
import type { WebhookTls } from "./tls.js";

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

  constructor(private readonly options: WebhookServerOptions) {
    this.app = Fastify({
      https: { cert: options.tls.serving.certPem, key: options.tls.serving.keyPem },
      // AdmissionReviews carry whole objects (and their old versions): allow what etcd allows and more.
      bodyLimit: 8 * 1024 * 1024,
      // One log line per admission request would drown everything else; keep warnings and errors.
      ...(options.logger
        ? { loggerInstance: options.logger.child({ component: "webhooks" }, { level: "warn" }) }
        : {}),
      // The API server keeps connections to webhooks open; closing must not wait for it to hang up.
      forceCloseConnections: true,
    }) as unknown as FastifyInstance;
    this.app.get("/healthz", async () => "ok");
  }

  register(webhook: AdmissionWebhook): void {
    if (this.webhooks.has(webhook.path)) throw new Error(`webhook path ${webhook.path} is registered twice`);
    this.webhooks.set(webhook.path, webhook);
    this.app.post(webhook.path, async (request, reply) => {
      const review = request.body as { request?: AdmissionRequest } | undefined;
      if (!review?.request?.uid) {
        return reply
          .code(400)
          .send({ title: "not an AdmissionReview", detail: "body.request.uid is missing" });
      }
      try {
        const decision = await webhook.handle(review.request);
        return toReviewResponse(review.request.uid, decision);
      } catch (err) {
        // A 500 lets the API server apply the webhook's failurePolicy.
        this.options.logger?.error({ err, webhook: webhook.name }, "webhook handler failed");
        return reply.code(500).send({ title: "webhook failed", detail: (err as Error).message });
      }
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
    (this.app.server as import("node:https").Server).setSecureContext({
      cert: tls.serving.certPem,
      key: tls.serving.keyPem,
    });
  }

  async stop(): Promise<void> {
    await this.app.close();
  }
}
