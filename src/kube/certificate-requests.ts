import type { CertificatesV1Api, V1CertificateSigningRequest } from "@kubernetes/client-node";
import { pollUntil } from "../common/index.js";

/** The signer of client certificates kube-apiserver accepts. */
export const KUBE_APISERVER_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client";

/** The usages tenantry asks for, and the only ones it approves (client authentication). */
export const CLIENT_USAGES = ["client auth", "digital signature", "key encipherment"] as const;

export interface ClientCertificateRequest {
  name: string;
  /** The PKCS#10 request, PEM. */
  csrPem: string;
  expirationSeconds: number;
  labels?: Record<string, string>;
}

/** A CertificateSigningRequest for a client certificate of kube-apiserver's signer. */
export function clientCertificateRequest(request: ClientCertificateRequest): V1CertificateSigningRequest {
  return {
    metadata: { name: request.name, ...(request.labels ? { labels: request.labels } : {}) },
    spec: {
      request: Buffer.from(request.csrPem).toString("base64"),
      signerName: KUBE_APISERVER_CLIENT_SIGNER,
      usages: [...CLIENT_USAGES],
      expirationSeconds: request.expirationSeconds,
    },
  };
}

/**
 * Polls a CertificateSigningRequest until its certificate is issued; throws when it is denied or
 * failed, or when `timeoutMs` passes (saying whether it was approved: who is missing).
 */
export async function waitForIssuedCertificate(
  api: CertificatesV1Api,
  name: string,
  options: { timeoutMs: number; pollMs?: [first: number, max: number]; beforeEachPoll?: () => void },
): Promise<string> {
  const [intervalMs, maxIntervalMs] = options.pollMs ?? [200, 2_000];
  let approved = false;
  const certificate = await pollUntil(
    async () => {
      options.beforeEachPoll?.();
      const current = await api.readCertificateSigningRequest({ name });
      const failed = current.status?.conditions?.find((c) => c.type === "Failed" || c.type === "Denied");
      if (failed) {
        throw new Error(
          `CertificateSigningRequest ${name} ${failed.type.toLowerCase()}: ${failed.message ?? failed.reason}`,
        );
      }
      approved = current.status?.conditions?.some((c) => c.type === "Approved") ?? false;
      return current.status?.certificate && Buffer.from(current.status.certificate, "base64").toString();
    },
    { timeoutMs: options.timeoutMs, intervalMs, maxIntervalMs },
  );
  if (certificate) return certificate;
  throw new Error(
    approved
      ? `CertificateSigningRequest ${name} was approved but not signed within ${options.timeoutMs / 1000}s: is kube-controller-manager running with a cluster signing key?`
      : `CertificateSigningRequest ${name} was not approved within ${options.timeoutMs / 1000}s`,
  );
}
