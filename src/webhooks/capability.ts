import { UserError } from "../common/index.js";
import { type Capability, type SharedContext, Slot, type Started } from "../kube/index.js";
import { type WebhookCertificateIssuer, WebhookCertificateKeeper } from "./certificate-keeper.js";
import {
  applyWebhookConfigurations,
  WEBHOOK_CONFIGURATION,
  type WebhookEndpoint,
  webhookConfigurations,
} from "./configuration.js";
import { type AdmissionCheck, admissionEntries } from "./dispatcher.js";
import { type WebhookCallers, WebhookServer } from "./server.js";
import {
  awaitWebhookTls,
  ensureWebhookTls,
  WEBHOOK_TLS_SECRET,
  type WebhookTls,
  type WebhookTlsOptions,
} from "./tls.js";

/** How the webhook serving certificate is made and renewed. */
export interface WebhookCertificateOptions {
  issuer?: WebhookCertificateIssuer;
  validDays?: number;
  renewBeforeDays?: number;
  checkIntervalMs?: number;
}

type Rotation = (next: WebhookTls, previous: WebhookTls) => Promise<void> | void;

/** The webhook serving certificate (also served by the identity and logical-clouds APIs), and who takes a renewed one. */
export class ServingCertificate {
  readonly rotations: Rotation[] = [];
  constructor(readonly tls: WebhookTls) {}

  /** Asks for a renewed certificate: `rotate` is called with it, without a restart. */
  onRotate(rotate: Rotation): void {
    this.rotations.push(rotate);
  }
}

export const SERVING_CERTIFICATE = new Slot<ServingCertificate>("the webhook serving certificate");

/** The admission webhook server's address ("" when it is not served). */
export const ADMISSION_URL = new Slot<string>("the admission webhooks' URL");

/**
 * The webhook serving certificate (Secret tenantry-webhook-tls): issued by tenantry or awaited from
 * another issuer (cert-manager), for every server of it.
 */
export class WebhookCertificateCapability implements Capability {
  readonly name = "webhook certificate";
  constructor(private readonly options: WebhookCertificateOptions = {}) {}

  async start({ client, namespace, host, logger, values }: SharedContext): Promise<undefined> {
    const tlsOptions = this.tlsOptions(namespace, host);
    const tls =
      (this.options.issuer ?? "self") === "self"
        ? await ensureWebhookTls(client.kubeConfig, tlsOptions)
        : await awaitWebhookTls(client.kubeConfig, tlsOptions, logger);
    values.set(SERVING_CERTIFICATE, new ServingCertificate(tls));
    return undefined;
  }

  private tlsOptions(namespace: string, host: string): WebhookTlsOptions {
    const { validDays, renewBeforeDays } = this.options;
    return {
      namespace,
      secretName: WEBHOOK_TLS_SECRET,
      ipAddresses: [host],
      dnsNames: ["localhost", `tenantry-webhooks.${namespace}.svc`],
      ...(validDays !== undefined ? { servingValidDays: validDays } : {}),
      ...(renewBeforeDays !== undefined ? { renewBeforeDays } : {}),
    };
  }

  /**
   * Checks the certificate every `checkIntervalMs` and gives a renewed one to everything that asked
   * for it; started after `servers`, so that none misses a renewal.
   */
  keeper(servers: readonly string[]): Capability {
    return {
      name: "webhook certificate keeper",
      dependsOn: [this.name, ...servers],
      start: async ({ client, namespace, host, metrics, logger, values, lifecycle }) => {
        const certificate = values.get(SERVING_CERTIFICATE);
        const { issuer, checkIntervalMs } = this.options;
        const keeper = new WebhookCertificateKeeper({
          kubeConfig: client.kubeConfig,
          tls: this.tlsOptions(namespace, host),
          issuer: issuer ?? "self",
          initial: certificate.tls,
          registry: metrics,
          logger,
          ...(checkIntervalMs ? { checkIntervalMs } : {}),
          onChange: async (next, previous) => {
            for (const rotate of certificate.rotations) await rotate(next, previous);
          },
        });
        keeper.start();
        lifecycle.started("webhook certificate keeper", keeper);
        return undefined;
      },
    };
  }
}

/** A capability that contributes admission checks, once started. */
export interface AdmissionSource {
  readonly name: string;
  admissionChecks(): AdmissionCheck[];
}

export interface AdmissionOptions {
  /** Served and registered with their URL, or with a Service in tenantry's namespace; false: neither. */
  webhooks?: { service?: { name: string; port?: number } } | false;
  /** The CA of kube-apiserver's webhook client certificate, or false to answer anyone (see TenantryOptions). */
  clientCa?: string | false;
  port?: number;
  /** The label naming an object's tenant. */
  tenantLabel: string;
}

/**
 * The admission webhook server, with one mutating and one validating entry, registered with
 * kube-apiserver. The sources' checks run in the order the sources are given: mutators change
 * the object in this order, and a quota reservation runs after every other validator allowed it.
 */
export class AdmissionCapability implements Capability {
  readonly name = "webhooks";
  readonly dependsOn: string[];
  private readonly callers: WebhookCallers | undefined;

  constructor(
    private readonly sources: readonly AdmissionSource[],
    private readonly options: AdmissionOptions,
  ) {
    this.dependsOn = ["webhook certificate", ...sources.map((s) => s.name)];
    this.callers = options.webhooks === false ? undefined : webhookCallers(options.clientCa);
  }

  async start({
    client,
    namespace,
    host,
    metrics,
    logger,
    values,
    lifecycle,
  }: SharedContext): Promise<Started> {
    const certificate = values.get(SERVING_CERTIFICATE);
    const checks = this.sources.flatMap((s) => s.admissionChecks());
    // One mutating and one validating entry per request: kube-apiserver calls tenantry once each way.
    const webhooks = admissionEntries(checks, { tenantLabel: this.options.tenantLabel, logger });
    if (this.callers === undefined) {
      values.set(ADMISSION_URL, "");
      return {};
    }
    const server = new WebhookServer({
      tls: certificate.tls,
      callers: this.callers,
      registry: metrics,
      host,
      ...(this.options.port ? { port: this.options.port } : {}),
      logger,
    });
    for (const webhook of webhooks) server.register(webhook);
    const webhookUrl = values.set(ADMISSION_URL, await server.start());
    lifecycle.started("admission webhooks", server);
    const service = this.options.webhooks ? this.options.webhooks.service : undefined;
    const registerWebhooks = async (caPem: string) => {
      const endpoint: WebhookEndpoint = service
        ? { service: { namespace, name: service.name, port: service.port ?? 443 }, caPem }
        : { url: webhookUrl, caPem };
      await applyWebhookConfigurations(
        client.kubeConfig,
        webhookConfigurations(WEBHOOK_CONFIGURATION, webhooks, endpoint, namespace),
      );
    };
    await registerWebhooks(certificate.tls.caPem);
    logger.info(
      { webhookUrl, service, webhooks: webhooks.map((w) => w.name) },
      "admission webhooks registered",
    );
    // A new CA (an external issuer's) goes into the webhook configurations too.
    certificate.onRotate(async (next, previous) => {
      server.rotate(next);
      if (next.caPem !== previous.caPem) await registerWebhooks(next.caPem);
    });
    return { servers: [server] };
  }
}

/** Who the admission webhooks answer; refuses to start without a decision (see `webhookClientCa`). */
function webhookCallers(clientCa: string | false | undefined): WebhookCallers {
  if (clientCa === false) return "anyone";
  if (!clientCa?.trim()) {
    throw new UserError(
      "webhookClientCa: the CA of kube-apiserver's webhook client certificate is required while admission webhooks are served (`tenantry run --webhook-client-ca FILE`, chart value apiServerClient.caBundle; see README, Install on your own cluster); without it anyone who reaches the webhook port could forge admission reviews",
    );
  }
  return { clientCaPem: clientCa };
}
