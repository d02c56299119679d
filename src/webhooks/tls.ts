import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api, type KubeConfig, type V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  certificateNames,
  createCertificateAuthority,
  daysUntilExpiry,
  issueCertificate,
  type KeyPairPem,
  loadCertificateAuthority,
} from "../pki/index.js";

/** The Secret holding the webhook CA and serving certificate (keys ca.crt, tls.crt, tls.key; ca.key when self-issued). */
export const WEBHOOK_TLS_SECRET = "tenantry-webhook-tls";
/** A self-issued serving certificate is renewed once fewer days than this remain. */
export const DEFAULT_RENEW_BEFORE_DAYS = 30;

export interface WebhookTls {
  caPem: string;
  serving: KeyPairPem;
}

export interface WebhookTlsOptions {
  namespace: string;
  secretName: string;
  /** Names the API server uses to reach the webhook server: loopback IPs, a Service's DNS names. */
  ipAddresses: string[];
  dnsNames: string[];
  /** Lifetime of a self-issued serving certificate (fractions allowed); default 365. */
  servingValidDays?: number;
  /** Reissue the serving certificate once fewer days than this remain (fractions allowed); default 30. */
  renewBeforeDays?: number;
}

const b64 = (s: string) => Buffer.from(s).toString("base64");
const unb64 = (s: string | undefined) => Buffer.from(s ?? "", "base64").toString();

function isNotFound(err: unknown): boolean {
  return (err as { code?: number }).code === 404;
}

async function readSecret(core: CoreV1Api, options: WebhookTlsOptions): Promise<V1Secret | undefined> {
  try {
    return await core.readNamespacedSecret({ name: options.secretName, namespace: options.namespace });
  } catch (err) {
    if (!isNotFound(err)) throw err;
    return undefined;
  }
}

/**
 * The webhook CA and serving certificate live in a Secret, so every replica and every restart serves
 * the same CA that the webhook configurations carry. The serving certificate is reissued from that
 * CA before it expires; the CA itself stays, so the caBundle never has to change under load.
 * `renewed` says whether this call wrote a new serving certificate.
 */
export async function ensureWebhookTls(
  kc: KubeConfig,
  options: WebhookTlsOptions,
): Promise<WebhookTls & { renewed: boolean }> {
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: options.namespace } } }).catch((err) => {
    if ((err as { code?: number }).code !== 409) throw err;
  });
  return issueOrRenew(core, options);
}

async function issueOrRenew(
  core: CoreV1Api,
  options: WebhookTlsOptions,
): Promise<WebhookTls & { renewed: boolean }> {
  const secret = await readSecret(core, options);
  const data = secret?.data ?? {};
  const ca = data["ca.crt"]
    ? await loadCertificateAuthority({ certPem: unb64(data["ca.crt"]), keyPem: unb64(data["ca.key"]) })
    : await createCertificateAuthority("tenantry-webhook-ca");
  const stored: KeyPairPem | undefined = data["tls.crt"]
    ? { certPem: unb64(data["tls.crt"]), keyPem: unb64(data["tls.key"]) }
    : undefined;
  if (
    stored &&
    daysUntilExpiry(stored.certPem) >= (options.renewBeforeDays ?? DEFAULT_RENEW_BEFORE_DAYS) &&
    coversNames(stored.certPem, options)
  ) {
    return { caPem: ca.certPem, serving: stored, renewed: false };
  }
  const serving = await issueCertificate(ca, {
    commonName: "tenantry-webhooks",
    ipAddresses: options.ipAddresses,
    dnsNames: options.dnsNames,
    usage: "server",
    validDays: options.servingValidDays ?? 365,
  });
  const body: V1Secret = {
    metadata: {
      name: options.secretName,
      namespace: options.namespace,
      labels: { "app.kubernetes.io/managed-by": "tenantry" },
    },
    type: "kubernetes.io/tls",
    data: {
      "ca.crt": b64(ca.certPem),
      "ca.key": b64(ca.keyPem),
      "tls.crt": b64(serving.certPem),
      "tls.key": b64(serving.keyPem),
    },
  };
  if (secret) {
    // resourceVersion makes a concurrent rotation by another replica fail instead of being overwritten.
    body.metadata!.resourceVersion = secret.metadata?.resourceVersion;
    await core.replaceNamespacedSecret({ name: options.secretName, namespace: options.namespace, body });
  } else {
    await core.createNamespacedSecret({ namespace: options.namespace, body });
  }
  return { caPem: ca.certPem, serving, renewed: true };
}

/**
 * The certificate someone else issues into the Secret (cert-manager's Certificate with
 * `secretName`): read as it is, never written. Undefined while the Secret or one of its keys is missing.
 */
export async function readWebhookTls(
  kc: KubeConfig,
  options: WebhookTlsOptions,
): Promise<WebhookTls | undefined> {
  const data = (await readSecret(kc.makeApiClient(CoreV1Api), options))?.data ?? {};
  if (!data["ca.crt"] || !data["tls.crt"] || !data["tls.key"]) return undefined;
  return {
    caPem: unb64(data["ca.crt"]),
    serving: { certPem: unb64(data["tls.crt"]), keyPem: unb64(data["tls.key"]) },
  };
}

/** Waits for an externally issued certificate (cert-manager issues it shortly after the chart is installed). */
export async function awaitWebhookTls(
  kc: KubeConfig,
  options: WebhookTlsOptions,
  logger: Logger,
  pollMs = 2_000,
): Promise<WebhookTls> {
  for (;;) {
    const tls = await readWebhookTls(kc, options);
    if (tls) return tls;
    logger.warn(
      { secret: `${options.namespace}/${options.secretName}` },
      "waiting for the webhook certificate: the Secret needs ca.crt, tls.crt and tls.key (is cert-manager's Certificate ready?)",
    );
    await sleep(pollMs);
  }
}

/** Renews a self-issued certificate when due (see {@link ensureWebhookTls}), without creating the namespace. */
export function renewWebhookTls(
  kc: KubeConfig,
  options: WebhookTlsOptions,
): Promise<WebhookTls & { renewed: boolean }> {
  return issueOrRenew(kc.makeApiClient(CoreV1Api), options);
}

function coversNames(certPem: string, options: WebhookTlsOptions): boolean {
  const names = certificateNames(certPem);
  return (
    options.ipAddresses.every((ip) => names.ipAddresses.includes(ip)) &&
    options.dnsNames.every((dns) => names.dnsNames.includes(dns))
  );
}
