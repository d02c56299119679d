/**
 * Peer certificates renewed the way kubelets renew theirs: the consumer asks the provider for a
 * new certificate with its current one, and the provider's tenantry approves a request only if
 * it asks for exactly what peering gave. These are the rules, kept apart from the controllers.
 */
import type { V1CertificateSigningRequest } from "@kubernetes/client-node";
import { type CertificateRequestSummary, checkCertificatePolicy } from "../identity/index.js";
import { KUBE_APISERVER_CLIENT_SIGNER } from "../kube/index.js";
import type { Tenant } from "../tenants/index.js";

/** The username prefix of peer users (see peerUsername). */
export const PEER_USERNAME_PREFIX = "tenantry-peer:";
/**
 * On the provider's peer Tenant and the consumer's credentials Secret: the lifetime, in seconds,
 * of the peering's certificates. Renewals ask for it and the provider approves no longer.
 */
export const PEER_CERTIFICATE_SECONDS_ANNOTATION = "tenantry.dev/peer-certificate-seconds";
/**
 * On a Peering: renew its certificate when less than this fraction of its lifetime is left
 * (default a third, as cert-manager does); a number above 0 and below 1.
 */
export const PEER_RENEW_FRACTION_ANNOTATION = "tenantry.dev/certificate-renew-fraction";
export const DEFAULT_RENEW_FRACTION = 1 / 3;

/** The lifetime an annotation names, or `fallback` when absent; throws naming the annotation when it is not a whole number of seconds. */
export function certificateSecondsOf(
  annotations: Record<string, string> | undefined,
  fallback: number,
): number {
  const text = annotations?.[PEER_CERTIFICATE_SECONDS_ANNOTATION];
  if (text === undefined) return fallback;
  const seconds = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(seconds) || seconds <= 0) {
    throw new Error(
      `annotation ${PEER_CERTIFICATE_SECONDS_ANNOTATION}: "${text}" is not a whole number of seconds above 0`,
    );
  }
  return seconds;
}

/** The renewal fraction a Peering asks for; throws naming the annotation and the limits when it is not one. */
export function renewFractionOf(annotations: Record<string, string> | undefined): number {
  const text = annotations?.[PEER_RENEW_FRACTION_ANNOTATION];
  if (text === undefined) return DEFAULT_RENEW_FRACTION;
  const fraction = Number(text);
  if (text.trim() === "" || !Number.isFinite(fraction) || fraction <= 0 || fraction >= 1) {
    throw new Error(
      `annotation ${PEER_RENEW_FRACTION_ANNOTATION}: "${text}" must be a number above 0 and below 1`,
    );
  }
  return fraction;
}

export type RenewalState = "valid" | "due" | "expired";

export interface RenewalSchedule {
  state: RenewalState;
  /** When less than `fraction` of the lifetime is left. */
  renewAt: Date;
}

/** Whether a certificate valid from `notBefore` to `notAfter` is due for renewal at `now`. */
export function renewalSchedule(
  notBefore: Date,
  notAfter: Date,
  now: Date,
  fraction: number,
): RenewalSchedule {
  const lifetime = notAfter.getTime() - notBefore.getTime();
  const renewAt = new Date(notAfter.getTime() - lifetime * fraction);
  const state = now >= notAfter ? "expired" : now >= renewAt ? "due" : "valid";
  return { state, renewAt };
}

export type PeerCertificateDecision =
  /** Not a request peering is concerned with: not even looked at. */
  | { kind: "ignore" }
  /** A peer user's request that breaks a rule: left for other approvers, never denied. */
  | { kind: "refuse"; reason: string }
  | { kind: "approve"; tenant: string; message: string };

/** Whether a CertificateSigningRequest was approved, denied or has failed already. */
export function isDecided(csr: V1CertificateSigningRequest): boolean {
  return Boolean(
    csr.status?.certificate ||
      csr.status?.conditions?.some((c) => ["Approved", "Denied", "Failed"].includes(c.type)),
  );
}

/**
 * The provider's rule for a peer's renewal request: asked by a peer user of a peering tenant that
 * exists here, for the kube-apiserver-client signer, CN the requester and no groups (O), client
 * authentication only, expiring within the peering's certificate lifetime. `request` is the parsed
 * PKCS#10 request (undefined when it did not parse; `parseError` says why).
 */
export function decidePeerCertificate(
  csr: V1CertificateSigningRequest,
  request: CertificateRequestSummary | undefined,
  parseError: string | undefined,
  peerTenantOf: (username: string) => Tenant | undefined,
  defaultSeconds: number,
): PeerCertificateDecision {
  const username = csr.spec?.username ?? "";
  if (!username.startsWith(PEER_USERNAME_PREFIX) || isDecided(csr)) return { kind: "ignore" };
  const refuse = (reason: string): PeerCertificateDecision => ({ kind: "refuse", reason });
  if (csr.spec.signerName !== KUBE_APISERVER_CLIENT_SIGNER) {
    return refuse(`signerName "${csr.spec.signerName}" is not ${KUBE_APISERVER_CLIENT_SIGNER}`);
  }
  const tenant = peerTenantOf(username);
  if (!tenant) return refuse(`no peering tenant here is owned by ${username}`);
  if (!request) return refuse(`the request does not parse: ${parseError ?? "unknown error"}`);
  const seconds = csr.spec.expirationSeconds;
  if (seconds === undefined)
    return refuse("expirationSeconds is not set: the signer's default could be longer");
  let maxSeconds: number;
  try {
    maxSeconds = certificateSecondsOf(tenant.metadata?.annotations, defaultSeconds);
  } catch (err) {
    return refuse(`Tenant ${tenant.metadata?.name}: ${(err as Error).message}`);
  }
  try {
    checkCertificatePolicy(
      request,
      { username, expirationSeconds: seconds, usages: csr.spec.usages ?? [] },
      { allowedGroups: [], maxExpirationSeconds: maxSeconds },
    );
  } catch (err) {
    return refuse((err as Error).message);
  }
  return {
    kind: "approve",
    tenant: tenant.metadata!.name!,
    message: `tenantry peering: ${username} of tenant ${tenant.metadata!.name} renews its client certificate (client auth only, ${seconds}s)`,
  };
}
