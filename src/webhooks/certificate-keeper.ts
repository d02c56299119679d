import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { Counter, type Gauge, type Registry } from "prom-client";
import { certificateExpiryGauge, recordCertificateEvent } from "../kube/index.js";
import { certificateValidity } from "../pki/index.js";
import {
  DEFAULT_RENEW_BEFORE_DAYS,
  readWebhookTls,
  renewWebhookTls,
  type WebhookTls,
  type WebhookTlsOptions,
} from "./tls.js";

const DAY_MS = 24 * 3600_000;

const notAfterOf = (certPem: string) => certificateValidity(certPem).notAfter;

/** Who issues the webhook certificate: tenantry itself, or someone else (cert-manager) into the Secret. */
export type WebhookCertificateIssuer = "self" | "external";

export interface WebhookCertificateKeeperOptions {
  kubeConfig: KubeConfig;
  tls: WebhookTlsOptions;
  issuer: WebhookCertificateIssuer;
  /** The certificate being served now. */
  initial: WebhookTls;
  /** Called with a certificate other than the one served: renewed here, by another replica, or by cert-manager. */
  onChange: (next: WebhookTls, previous: WebhookTls) => Promise<void> | void;
  /**
   * Which certificate this is, in metric labels (`<certificate>-serving`, `<certificate>-ca`) and
   * messages; default "webhook". The gateway keeps its own with this keeper too.
   */
  certificate?: string;
  /** Also run at every check, after the certificate's: other TLS material a server reloads on the same schedule (the gateway's client CA). */
  onCheck?: () => Promise<void>;
  /** How often the Secret is looked at; default 10 minutes. */
  checkIntervalMs?: number;
  registry?: Registry;
  logger: Logger;
  now?: () => number;
}

/**
 * Keeps the webhook serving certificate valid without a restart: every check reads the Secret,
 * renews a self-issued certificate that is due (one replica wins the compare-and-swap, the others
 * pick its certificate up at their next check) and hands any new certificate to the servers.
 * Expiry is a metric; a certificate that is due and was not renewed, or a renewal that failed, is
 * a warning Event on the Secret.
 */
export class WebhookCertificateKeeper {
  private current: WebhookTls;
  private timer?: NodeJS.Timeout;
  private checking?: Promise<void>;
  private readonly warned = new Set<string>();
  private readonly expiry?: Gauge<"certificate">;
  private readonly renewals?: Counter<"certificate" | "result">;
  private readonly certificate: string;
  private readonly now: () => number;
  private readonly core: CoreV1Api;

  constructor(private readonly options: WebhookCertificateKeeperOptions) {
    this.current = options.initial;
    this.now = options.now ?? Date.now;
    this.core = options.kubeConfig.makeApiClient(CoreV1Api);
    this.certificate = options.certificate ?? "webhook";
    if (options.registry) {
      this.expiry = certificateExpiryGauge(options.registry);
      this.renewals = renewalsCounter(options.registry);
    }
    this.record(this.current);
  }

  /** The certificate served now. */
  get tls(): WebhookTls {
    return this.current;
  }

  start(): void {
    const interval = this.options.checkIntervalMs ?? 10 * 60_000;
    this.timer = setInterval(() => void this.check(), interval);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.checking;
  }

  /** One check (also run by the timer); overlapping calls share one. */
  check(): Promise<void> {
    this.checking ??= this.checkOnce().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  private async checkOnce(): Promise<void> {
    const { kubeConfig, tls, issuer, logger } = this.options;
    let next: WebhookTls | undefined;
    try {
      if (issuer === "self") {
        const result = await renewWebhookTls(kubeConfig, tls);
        if (result.renewed) {
          this.renewals?.inc({ certificate: this.certificate, result: "renewed" });
          this.event(
            "Normal",
            "CertificateRenewed",
            `renewed the ${this.certificate} serving certificate: valid until ${notAfterOf(result.serving.certPem).toISOString()}`,
          );
        }
        next = { caPem: result.caPem, serving: result.serving };
      } else {
        next = await readWebhookTls(kubeConfig, tls);
      }
    } catch (err) {
      // A conflict is another replica renewing at the same moment: its certificate is read next time.
      const conflict = (err as { code?: number }).code === 409;
      if (!conflict) {
        this.renewals?.inc({ certificate: this.certificate, result: "failed" });
        logger.warn({ err }, `checking the ${this.certificate} certificate failed`);
        this.warnOnce(
          `failed:${notAfterOf(this.current.serving.certPem).getTime()}`,
          "CertificateRenewalFailed",
          `could not ${issuer === "self" ? "renew" : "read"} the ${this.certificate} serving certificate: ${(err as Error).message}`,
        );
      }
    }
    if (
      next &&
      (next.serving.certPem !== this.current.serving.certPem || next.caPem !== this.current.caPem)
    ) {
      const previous = this.current;
      this.current = next;
      this.record(next);
      logger.info(
        {
          notAfter: notAfterOf(next.serving.certPem).toISOString(),
          caChanged: next.caPem !== previous.caPem,
        },
        `serving a new ${this.certificate} certificate`,
      );
      try {
        await this.options.onChange(next, previous);
      } catch (err) {
        logger.error({ err }, `switching to the new ${this.certificate} certificate failed`);
      }
    }
    this.warnIfDue();
    await this.options
      .onCheck?.()
      .catch((err: unknown) => logger.warn({ err }, "checking TLS material failed"));
  }

  private record(tls: WebhookTls): void {
    this.expiry?.set(
      { certificate: `${this.certificate}-serving` },
      notAfterOf(tls.serving.certPem).getTime() / 1000,
    );
    this.expiry?.set({ certificate: `${this.certificate}-ca` }, notAfterOf(tls.caPem).getTime() / 1000);
  }

  /**
   * The served certificate is due and still here: tenantry could not renew it, or cert-manager has
   * not. "Due" is the renewal window, shortened for certificates living less than three windows
   * (cert-manager renews at a third of the lifetime left by default).
   */
  private warnIfDue(): void {
    const validity = certificateValidity(this.current.serving.certPem);
    const notAfter = validity.notAfter.getTime();
    const remainingMs = notAfter - this.now();
    const windowMs = (this.options.tls.renewBeforeDays ?? DEFAULT_RENEW_BEFORE_DAYS) * DAY_MS;
    const lifetimeMs = notAfter - validity.notBefore.getTime();
    const dueMs = this.options.issuer === "self" ? windowMs : Math.min(windowMs, lifetimeMs / 3);
    if (remainingMs >= dueMs) return;
    const when = new Date(notAfter).toISOString();
    this.warnOnce(
      `expiring:${notAfter}`,
      remainingMs <= 0 ? "CertificateExpired" : "CertificateExpiring",
      remainingMs <= 0
        ? `the ${this.certificate} serving certificate expired at ${when}${this.certificate === "webhook" ? ": the API server cannot call tenantry's webhooks" : ""}`
        : `the ${this.certificate} serving certificate expires at ${when} and has not been renewed${this.options.issuer === "self" ? "" : " by its issuer (check cert-manager's Certificate)"}`,
    );
  }

  private warnOnce(key: string, reason: string, message: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.options.logger.warn({ reason }, message);
    this.event("Warning", reason, message);
  }

  private event(type: "Normal" | "Warning", reason: string, message: string): void {
    const { namespace, secretName } = this.options.tls;
    void recordCertificateEvent(
      this.core,
      { apiVersion: "v1", kind: "Secret", namespace, name: secretName },
      { type, reason, message, component: "tenantry.dev/webhooks" },
      this.options.logger,
    );
  }
}

/** One counter per registry, shared by every keeper registering into it. */
function renewalsCounter(registry: Registry): Counter<"certificate" | "result"> {
  const name = "tenantry_certificate_renewals_total";
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Counter<"certificate" | "result">;
  return new Counter({
    name,
    help: "Renewals of serving certificates this replica attempted, by certificate and result.",
    labelNames: ["certificate", "result"],
    registers: [registry],
  });
}
