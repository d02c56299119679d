import { CoreV1Api, type KubeConfig, type V1Secret } from "@kubernetes/client-node";
import {
  certificateNames,
  createCertificateAuthority,
  daysUntilExpiry,
  issueCertificate,
  type KeyPairPem,
  loadCertificateAuthority,
} from "../pki/index.js";

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
  servingValidDays?: number;
  /** Reissue the serving certificate once fewer days than this remain. */
  renewBeforeDays?: number;
}

const b64 = (s: string) => Buffer.from(s).toString("base64");
const unb64 = (s: string | undefined) => Buffer.from(s ?? "", "base64").toString();

function isNotFound(err: unknown): boolean {
  return (err as { code?: number }).code === 404;
}

/**
 * The webhook CA and serving certificate live in a Secret, so every replica and every restart serves
 * the same CA that the webhook configurations carry. The serving certificate is reissued from that
 * CA before it expires; the CA itself stays, so the caBundle never has to change under load.
 */
export async function ensureWebhookTls(kc: KubeConfig, options: WebhookTlsOptions): Promise<WebhookTls> {
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: options.namespace } } }).catch((err) => {
    if ((err as { code?: number }).code !== 409) throw err;
  });
  let secret: V1Secret | undefined;
  try {
    secret = await core.readNamespacedSecret({ name: options.secretName, namespace: options.namespace });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  const data = secret?.data ?? {};
  const ca = data["ca.crt"]
    ? await loadCertificateAuthority({ certPem: unb64(data["ca.crt"]), keyPem: unb64(data["ca.key"]) })
    : await createCertificateAuthority("tenantry-webhook-ca");
  let serving: KeyPairPem | undefined = data["tls.crt"]
    ? { certPem: unb64(data["tls.crt"]), keyPem: unb64(data["tls.key"]) }
    : undefined;
  if (
    !serving ||
    daysUntilExpiry(serving.certPem) < (options.renewBeforeDays ?? 30) ||
    !coversNames(serving.certPem, options)
  ) {
    serving = await issueCertificate(ca, {
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
  }
  return { caPem: ca.certPem, serving };
}

function coversNames(certPem: string, options: WebhookTlsOptions): boolean {
  const names = certificateNames(certPem);
  return (
    options.ipAddresses.every((ip) => names.ipAddresses.includes(ip)) &&
    options.dnsNames.every((dns) => names.dnsNames.includes(dns))
  );
}
