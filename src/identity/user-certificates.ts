// @peculiar/x509 resolves its algorithms through tsyringe, which needs the reflect polyfill loaded first.
import "reflect-metadata";
import { createPrivateKey, createPublicKey, randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { CertificatesV1Api, type KubeConfig } from "@kubernetes/client-node";
import * as x509 from "@peculiar/x509";
import { UserError } from "../common/index.js";
import {
  CLIENT_USAGES,
  type ClusterClient,
  clientCertificateRequest,
  describeError,
  waitForIssuedCertificate,
} from "../kube/index.js";
import { createCertificateRequest } from "../pki/index.js";
import { MANAGED_BY, MANAGED_BY_LABEL, TENANT_LABEL, USER_LABEL, userLabelValue } from "../tenants/index.js";

/** The reason recorded on every CertificateSigningRequest tenantry approves. */
export const APPROVAL_REASON = "TenantryPolicy";
/** The API server refuses to honour a shorter expirationSeconds. */
export const MIN_EXPIRATION_SECONDS = 600;
export const DEFAULT_MAX_EXPIRATION_SECONDS = 30 * 24 * 3600;
export const DEFAULT_EXPIRATION_SECONDS = 7 * 24 * 3600;
/** A certificate within this fraction of its lifetime from expiry should be renewed. */
export const RENEW_FRACTION = 0.2;

const USERNAME = /^[^\s,/+"\\<>;=]{1,256}$/;
const TENANT_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

// ---------------------------------------------------------------------------------------------
// Approval policy

/** What a PKCS#10 request asks for, as far as the approval policy cares. */
export interface CertificateRequestSummary {
  pem: string;
  commonNames: string[];
  /** Subject O values: the groups the API server will put the user in. */
  groups: string[];
  /** Usages named by the request's own extensions (the signer uses spec.usages, but a request asking for more is suspect). */
  requestedUsages: string[];
  requestsCa: boolean;
  alternativeNames: string[];
  /** DER SubjectPublicKeyInfo, to match a key file against the request. */
  publicKeySpki: Uint8Array;
}

export interface CertificatePolicy {
  /** Groups tenantry vouches for this user: the request's O may name these and no others. */
  allowedGroups: readonly string[];
  maxExpirationSeconds?: number;
}

export interface RequestedCertificate {
  username: string;
  expirationSeconds: number;
  usages: readonly string[];
}

const KEY_USAGE_NAMES: [x509.KeyUsageFlags, string][] = [
  [x509.KeyUsageFlags.digitalSignature, "digital signature"],
  [x509.KeyUsageFlags.nonRepudiation, "content commitment"],
  [x509.KeyUsageFlags.keyEncipherment, "key encipherment"],
  [x509.KeyUsageFlags.dataEncipherment, "data encipherment"],
  [x509.KeyUsageFlags.keyAgreement, "key agreement"],
  [x509.KeyUsageFlags.keyCertSign, "cert sign"],
  [x509.KeyUsageFlags.cRLSign, "crl sign"],
  [x509.KeyUsageFlags.encipherOnly, "encipher only"],
  [x509.KeyUsageFlags.decipherOnly, "decipher only"],
];

const EXTENDED_KEY_USAGE_NAMES: Record<string, string> = {
  [x509.ExtendedKeyUsage.serverAuth]: "server auth",
  [x509.ExtendedKeyUsage.clientAuth]: "client auth",
  [x509.ExtendedKeyUsage.codeSigning]: "code signing",
  [x509.ExtendedKeyUsage.emailProtection]: "email protection",
  [x509.ExtendedKeyUsage.timeStamping]: "timestamping",
  [x509.ExtendedKeyUsage.ocspSigning]: "ocsp signing",
};

/** Reads a PEM PKCS#10 request and checks its self-signature (the requester holds the key). */
export async function parseCertificateRequest(pem: string): Promise<CertificateRequestSummary> {
  let csr: x509.Pkcs10CertificateRequest;
  try {
    csr = new x509.Pkcs10CertificateRequest(pem);
  } catch (err) {
    throw new UserError(
      `not a PEM certificate request (-----BEGIN CERTIFICATE REQUEST-----): ${(err as Error).message}`,
    );
  }
  if (!(await csr.verify().catch(() => false))) {
    throw new UserError("the certificate request's signature does not verify with its own public key");
  }
  const requestedUsages: string[] = [];
  let requestsCa = false;
  const alternativeNames: string[] = [];
  for (const extension of csr.extensions) {
    if (extension instanceof x509.KeyUsagesExtension) {
      for (const [flag, name] of KEY_USAGE_NAMES) if (extension.usages & flag) requestedUsages.push(name);
    } else if (extension instanceof x509.ExtendedKeyUsageExtension) {
      for (const usage of extension.usages) {
        const oid = String(usage);
        requestedUsages.push(EXTENDED_KEY_USAGE_NAMES[oid] ?? oid);
      }
    } else if (extension instanceof x509.BasicConstraintsExtension) {
      requestsCa ||= extension.ca;
    } else if (extension instanceof x509.SubjectAlternativeNameExtension) {
      alternativeNames.push(...extension.names.toJSON().map((n) => `${n.type}:${n.value}`));
    }
  }
  return {
    pem: csr.toString("pem"),
    commonNames: csr.subjectName.getField("CN"),
    groups: csr.subjectName.getField("O"),
    requestedUsages,
    requestsCa,
    alternativeNames,
    publicKeySpki: new Uint8Array(csr.publicKey.rawData),
  };
}

/** Checks a username before anything is requested for it. */
export function checkUsername(username: string): void {
  if (!USERNAME.test(username)) {
    throw new UserError(
      `username "${username}" must be 1 to 256 characters without spaces or any of , / + " \\ < > ; =`,
    );
  }
  if (username.startsWith("system:")) {
    throw new UserError(`username "${username}": names starting with "system:" belong to the cluster itself`);
  }
}

/**
 * The approval policy: tenantry approves a CertificateSigningRequest only if this returns. CN is
 * the user, O names only groups tenantry allows them and never a `system:` group (system:masters
 * bypasses all authorization), the certificate is for client authentication only, and it expires
 * in at most `maxExpirationSeconds`. Throws a UserError naming every field that breaks it.
 */
export function checkCertificatePolicy(
  request: CertificateRequestSummary,
  wanted: RequestedCertificate,
  policy: CertificatePolicy,
): void {
  const violations: string[] = [];
  const max = policy.maxExpirationSeconds ?? DEFAULT_MAX_EXPIRATION_SECONDS;
  if (max < MIN_EXPIRATION_SECONDS) {
    violations.push(
      `maximum expiration ${formatDuration(max)} is below the minimum ${formatDuration(MIN_EXPIRATION_SECONDS)} the API server honours`,
    );
  }

  if (request.commonNames.length !== 1) {
    violations.push(
      `subject CN: must be exactly one, the username "${wanted.username}"; found ${request.commonNames.length}`,
    );
  } else if (request.commonNames[0] !== wanted.username) {
    violations.push(`subject CN: "${request.commonNames[0]}" must be the username "${wanted.username}"`);
  }

  const allowed = new Set(policy.allowedGroups.filter((g) => !g.startsWith("system:")));
  const allowedText = allowed.size ? [...allowed].map((g) => `"${g}"`).join(", ") : "none";
  for (const group of request.groups) {
    if (group.startsWith("system:")) {
      violations.push(
        `subject O (groups): "${group}" is a system: group; tenantry never signs one (system:masters bypasses all authorization)`,
      );
    } else if (!allowed.has(group)) {
      violations.push(
        `subject O (groups): "${group}" is not a group allowed for ${wanted.username} (allowed: ${allowedText})`,
      );
    }
  }

  const permitted = new Set<string>(CLIENT_USAGES);
  const permittedText = CLIENT_USAGES.join(", ");
  for (const usage of new Set([...wanted.usages, ...request.requestedUsages])) {
    if (!permitted.has(usage)) violations.push(`usages: "${usage}" is not allowed; only ${permittedText}`);
  }
  if (!wanted.usages.includes("client auth")) violations.push(`usages: must include "client auth"`);
  if (request.requestsCa) violations.push("extensions: basicConstraints asks for a CA certificate");
  if (request.alternativeNames.length) {
    violations.push(
      `extensions: subjectAltName ${request.alternativeNames.join(", ")} is not allowed; a user certificate names only CN and O`,
    );
  }

  const seconds = wanted.expirationSeconds;
  if (!Number.isInteger(seconds) || seconds < MIN_EXPIRATION_SECONDS) {
    violations.push(
      `expirationSeconds: ${seconds} (${formatDuration(seconds)}) is below the minimum ${MIN_EXPIRATION_SECONDS} (${formatDuration(MIN_EXPIRATION_SECONDS)})`,
    );
  } else if (seconds > max) {
    violations.push(
      `expirationSeconds: ${seconds} (${formatDuration(seconds)}) exceeds the maximum ${max} (${formatDuration(max)})`,
    );
  }

  if (violations.length) {
    throw new UserError(`certificate request for "${wanted.username}" refused: ${violations.join("; ")}`);
  }
}

/** Whether a PKCS#8 private key (PEM) is the key of the request. */
export function keyMatchesRequest(keyPem: string, request: CertificateRequestSummary): boolean {
  const spki = createPublicKey(createPrivateKey(keyPem)).export({ type: "spki", format: "der" });
  return Buffer.compare(spki, Buffer.from(request.publicKeySpki)) === 0;
}

// ---------------------------------------------------------------------------------------------
// Durations and expiry

const UNITS: [string, number][] = [
  ["d", 86400],
  ["h", 3600],
  ["m", 60],
  ["s", 1],
];

/** `90s`, `10m`, `1h`, `7d`, `1d12h`, `2w` → seconds. */
export function parseDuration(text: string): number {
  const match = /^(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text.trim());
  if (!text.trim() || !match) {
    throw new UserError(`duration "${text}" must be like 10m, 1h, 7d, 1d12h or 2w`);
  }
  const [, w, d, h, m, s] = match.map((v) => Number(v ?? 0));
  return w! * 7 * 86400 + d! * 86400 + h! * 3600 + m! * 60 + s!;
}

/** Seconds as the two largest units: `30d`, `6d23h`, `59m`, `45s`. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return String(seconds);
  let rest = Math.round(Math.abs(seconds));
  const parts: string[] = [];
  for (const [unit, size] of UNITS) {
    const count = Math.floor(rest / size);
    rest -= count * size;
    if (count > 0 && parts.length < 2) parts.push(`${count}${unit}`);
    else if (parts.length) break;
  }
  return `${seconds < 0 ? "-" : ""}${parts.join("") || "0s"}`;
}

export type ExpiryState = "valid" | "renew soon" | "expired" | "not yet valid";

export interface ExpiryStatus {
  state: ExpiryState;
  lifetimeSeconds: number;
  remainingSeconds: number;
}

/** Expired, or within RENEW_FRACTION of its lifetime from expiry ("renew soon"), or valid. */
export function classifyExpiry(notBefore: Date, notAfter: Date, now = new Date()): ExpiryStatus {
  const lifetimeSeconds = (notAfter.getTime() - notBefore.getTime()) / 1000;
  const remainingSeconds = (notAfter.getTime() - now.getTime()) / 1000;
  let state: ExpiryState = "valid";
  if (remainingSeconds <= 0) state = "expired";
  else if (now < notBefore) state = "not yet valid";
  else if (remainingSeconds <= lifetimeSeconds * RENEW_FRACTION) state = "renew soon";
  return { state, lifetimeSeconds, remainingSeconds };
}

export interface CertificateDetails extends ExpiryStatus {
  subject: string;
  commonName: string;
  groups: string[];
  issuer: string;
  notBefore: Date;
  notAfter: Date;
}

export function certificateDetails(certPem: string, now = new Date()): CertificateDetails {
  const cert = new x509.X509Certificate(certPem);
  return {
    subject: cert.subject,
    commonName: cert.subjectName.getField("CN")[0] ?? "",
    groups: cert.subjectName.getField("O"),
    issuer: cert.issuer,
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    ...classifyExpiry(cert.notBefore, cert.notAfter, now),
  };
}

// ---------------------------------------------------------------------------------------------
// Signing through a cluster's CertificateSigningRequest API

class Cancelled extends Error {
  override readonly name = "Cancelled";
}

interface SignRequest {
  username: string;
  tenant?: string;
  csrPem: string;
  expirationSeconds: number;
  timeoutMs: number;
  signal?: AbortSignal;
  step?: (message: string) => void;
}

function requestName(username: string): string {
  const slug = username
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, "-")
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, "")
    .slice(0, 200);
  return `tenantry-${slug || "user"}-${randomBytes(4).toString("hex")}`;
}

function throwIfCancelled(signal?: AbortSignal): void {
  if (signal?.aborted) throw new Cancelled("cancelled: another cluster failed");
}

/**
 * Creates one CertificateSigningRequest, approves it, waits for the signer and returns the
 * certificate. The request object is deleted afterwards whatever happened: it has served its
 * purpose once the certificate is in hand, and must not linger when another cluster failed.
 */
async function signOnCluster(api: CertificatesV1Api, request: SignRequest): Promise<string> {
  const name = requestName(request.username);
  const step = request.step ?? (() => {});
  throwIfCancelled(request.signal);
  const body = clientCertificateRequest({
    name,
    csrPem: request.csrPem,
    expirationSeconds: request.expirationSeconds,
    labels: {
      [MANAGED_BY_LABEL]: MANAGED_BY,
      [USER_LABEL]: userLabelValue(request.username),
      ...(request.tenant ? { [TENANT_LABEL]: request.tenant } : {}),
    },
  });
  try {
    await api.createCertificateSigningRequest({ body });
    step(`CertificateSigningRequest ${name} created`);
    throwIfCancelled(request.signal);
    const created = await api.readCertificateSigningRequest({ name });
    created.status = {
      ...created.status,
      conditions: [
        {
          type: "Approved",
          status: "True",
          reason: APPROVAL_REASON,
          message: `tenantry policy: CN ${request.username}, client auth only, expires in ${formatDuration(request.expirationSeconds)}`,
          lastUpdateTime: new Date(),
        },
      ],
    };
    await api.replaceCertificateSigningRequestApproval({ name, body: created });
    step("approved");
    return await waitForIssuedCertificate(api, name, {
      timeoutMs: request.timeoutMs,
      pollMs: [50, 500],
      beforeEachPoll: () => throwIfCancelled(request.signal),
    });
  } finally {
    await api.deleteCertificateSigningRequest({ name }).catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------
// One user, every cluster of a tenant

/** The namespaces of a tenant in one cluster (labelled tenantry.dev/tenant=<tenant>), sorted. */
export async function tenantNamespaces(client: ClusterClient, tenant: string): Promise<string[]> {
  const list = await client.core.listNamespace({ labelSelector: `${TENANT_LABEL}=${tenant}` });
  return list.items
    .filter((n) => !n.metadata?.deletionTimestamp)
    .map((n) => n.metadata!.name!)
    .sort();
}

export interface IssueUserCertificatesOptions {
  username: string;
  tenant: string;
  /** Clusters to sign in, in the order their contexts should appear. */
  clusters: ClusterClient[];
  /** Groups the certificate carries (generated key), or may carry (a user's own request). */
  groups?: string[];
  /** The user's own PEM request: no private key is made or seen. */
  certificateRequest?: string;
  /** The private key of `certificateRequest`, when tenantry holds it (renewing with the same key). */
  keyPem?: string;
  expirationSeconds?: number;
  maxExpirationSeconds?: number;
  /** Per cluster, how long to wait for the signer. */
  timeoutMs?: number;
  /** Leave out clusters where the tenant has no namespaces (else they are an error). */
  skipClustersWithoutNamespaces?: boolean;
  onProgress?: (cluster: string, message: string) => void;
}

export interface ClusterCertificate {
  cluster: string;
  server: string;
  /** Base64 PEM of the CA that serves the API. */
  caData?: string;
  tlsServerName?: string;
  insecureSkipTlsVerify?: boolean;
  namespaces: string[];
  certPem: string;
  /** Milliseconds from creating the request to holding the certificate. */
  issueMs: number;
}

export interface IssuedUserCertificates {
  username: string;
  tenant: string;
  groups: string[];
  expirationSeconds: number;
  /** The PEM request every cluster signed; kept so a renewal can reuse the key. */
  certificateRequest: string;
  /** Absent when the user brought their own request. */
  keyPem?: string;
  clusters: ClusterCertificate[];
}

/** Base64 CA data of a cluster entry, reading a CA file when the kubeconfig refers to one. */
async function caDataOf(client: ClusterClient): Promise<string | undefined> {
  const cluster = client.kubeConfig.getCurrentCluster()!;
  if (cluster.caData) return cluster.caData;
  if (cluster.caFile) {
    return (await readFile(cluster.caFile)).toString("base64");
  }
  return undefined;
}

function failureSummary(failures: { cluster: string; reason: string }[]): string {
  return failures.map((f) => `cluster "${f.cluster}": ${f.reason}`).join("; ");
}

/**
 * Issues a client certificate for a user in every cluster of a tenant. First, before anything is
 * created anywhere: the request is checked against the approval policy and each cluster's
 * namespaces of the tenant are read. Then, in all clusters at once, a CertificateSigningRequest
 * is created, approved and collected. If any cluster fails, the others stop, every request
 * object is deleted, and the error names each cluster that failed and why.
 */
export async function issueUserCertificates(
  options: IssueUserCertificatesOptions,
): Promise<IssuedUserCertificates> {
  const { username, tenant } = options;
  checkUsername(username);
  if (!TENANT_NAME.test(tenant)) throw new UserError(`tenant "${tenant}" is not a valid tenant name`);
  if (options.clusters.length === 0) throw new UserError("no clusters: name at least one");
  const names = options.clusters.map((c) => c.name);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate) throw new UserError(`cluster "${duplicate}" is named twice`);
  const expirationSeconds = options.expirationSeconds ?? DEFAULT_EXPIRATION_SECONDS;
  const progress = options.onProgress ?? (() => {});

  let csrPem = options.certificateRequest;
  let keyPem = options.keyPem;
  if (!csrPem) ({ csrPem, keyPem } = await createCertificateRequest(username, options.groups ?? []));
  const request = await parseCertificateRequest(csrPem);
  checkCertificatePolicy(
    request,
    { username, expirationSeconds, usages: CLIENT_USAGES },
    { allowedGroups: options.groups ?? [], maxExpirationSeconds: options.maxExpirationSeconds },
  );
  if (keyPem && !keyMatchesRequest(keyPem, request)) {
    throw new UserError("the private key does not belong to the certificate request");
  }

  const found = await Promise.allSettled(options.clusters.map((client) => tenantNamespaces(client, tenant)));
  const unreadable = found.flatMap((result, i) =>
    result.status === "rejected" ? [{ cluster: names[i]!, reason: describeError(result.reason) }] : [],
  );
  if (unreadable.length) {
    throw new Error(
      `could not read the namespaces of tenant "${tenant}": ${failureSummary(unreadable)}; nothing was requested in any cluster`,
    );
  }
  const targets: { client: ClusterClient; namespaces: string[] }[] = [];
  const empty: string[] = [];
  options.clusters.forEach((client, i) => {
    const namespaces = (found[i] as PromiseFulfilledResult<string[]>).value;
    if (namespaces.length === 0) {
      empty.push(client.name);
      if (options.skipClustersWithoutNamespaces)
        progress(client.name, `no namespaces of tenant "${tenant}": skipped`);
      return;
    }
    progress(client.name, `namespaces ${namespaces.join(", ")}`);
    targets.push({ client, namespaces });
  });
  if (targets.length === 0 || (empty.length && !options.skipClustersWithoutNamespaces)) {
    throw new UserError(
      `tenant "${tenant}" has no namespaces (labelled ${TENANT_LABEL}=${tenant}) in ${empty.map((n) => `"${n}"`).join(", ")}; nothing was requested in any cluster`,
    );
  }

  const abort = new AbortController();
  const signed = await Promise.allSettled(
    targets.map(async ({ client, namespaces }): Promise<ClusterCertificate> => {
      const started = Date.now();
      try {
        const certPem = await signOnCluster(client.kubeConfig.makeApiClient(CertificatesV1Api), {
          username,
          tenant,
          csrPem: request.pem,
          expirationSeconds,
          timeoutMs: options.timeoutMs ?? 30_000,
          signal: abort.signal,
          step: (message) => progress(client.name, message),
        });
        const issueMs = Date.now() - started;
        const cluster = client.kubeConfig.getCurrentCluster()!;
        progress(
          client.name,
          `signed in ${(issueMs / 1000).toFixed(2)}s, expires ${certificateDetails(certPem).notAfter.toISOString()}`,
        );
        return {
          cluster: client.name,
          server: cluster.server,
          caData: await caDataOf(client),
          ...(cluster.tlsServerName ? { tlsServerName: cluster.tlsServerName } : {}),
          ...(cluster.skipTLSVerify ? { insecureSkipTlsVerify: true } : {}),
          namespaces,
          certPem,
          issueMs,
        };
      } catch (err) {
        abort.abort();
        throw err;
      }
    }),
  );
  const failed = signed.flatMap((result, i) =>
    result.status === "rejected" && !(result.reason instanceof Cancelled)
      ? [{ cluster: targets[i]!.client.name, reason: describeError(result.reason) }]
      : [],
  );
  if (failed.length) {
    const others = targets.map((t) => t.client.name).filter((n) => !failed.some((f) => f.cluster === n));
    throw new Error(
      `could not issue a certificate for "${username}": ${failureSummary(failed)}; nothing was written${
        others.length ? ` and the requests in ${others.join(", ")} were deleted` : ""
      }`,
    );
  }
  return {
    username,
    tenant,
    groups: request.groups,
    expirationSeconds,
    certificateRequest: request.pem,
    ...(keyPem ? { keyPem } : {}),
    clusters: signed.map((result) => (result as PromiseFulfilledResult<ClusterCertificate>).value),
  };
}

// ---------------------------------------------------------------------------------------------
// One user, one cluster (the embedded default's demo user)

export interface UserCertificateOptions {
  username: string;
  groups?: string[];
  /** Requested lifetime; the cluster may shorten it. */
  expirationSeconds?: number;
  timeoutMs?: number;
}

export interface UserCredentials {
  username: string;
  certPem: string;
  keyPem: string;
  expiresAt?: Date;
}

/**
 * Has one cluster sign a client certificate for a user with a key made here, under the same
 * approval policy. The private key never leaves this process.
 */
export async function requestUserCertificate(
  kc: KubeConfig,
  options: UserCertificateOptions,
): Promise<UserCredentials> {
  checkUsername(options.username);
  const expirationSeconds = options.expirationSeconds ?? DEFAULT_EXPIRATION_SECONDS;
  const { csrPem, keyPem } = await createCertificateRequest(options.username, options.groups ?? []);
  checkCertificatePolicy(
    await parseCertificateRequest(csrPem),
    { username: options.username, expirationSeconds, usages: CLIENT_USAGES },
    { allowedGroups: options.groups ?? [] },
  );
  const certPem = await signOnCluster(kc.makeApiClient(CertificatesV1Api), {
    username: options.username,
    csrPem,
    expirationSeconds,
    timeoutMs: options.timeoutMs ?? 30_000,
  });
  return { username: options.username, certPem, keyPem, expiresAt: certificateDetails(certPem).notAfter };
}

// ---------------------------------------------------------------------------------------------
// One request, one cluster (logical clouds: the user's own request or a key tenantry holds)

/**
 * Checks a PEM certificate request against the approval policy before it is sent anywhere: CN
 * the username, groups (O) only among `allowedGroups`, client authentication only. Throws a
 * UserError naming every field that breaks it.
 */
export async function checkUserCertificateRequest(
  pem: string,
  username: string,
  options: { allowedGroups?: readonly string[]; expirationSeconds?: number } = {},
): Promise<CertificateRequestSummary> {
  checkUsername(username);
  const request = await parseCertificateRequest(pem);
  checkCertificatePolicy(
    request,
    {
      username,
      expirationSeconds: options.expirationSeconds ?? DEFAULT_EXPIRATION_SECONDS,
      usages: CLIENT_USAGES,
    },
    { allowedGroups: options.allowedGroups ?? [] },
  );
  return request;
}

export interface SignCertificateRequestOptions {
  username: string;
  /** PEM PKCS#10 request, checked against the approval policy first. */
  certificateRequest: string;
  allowedGroups?: readonly string[];
  expirationSeconds?: number;
  timeoutMs?: number;
  /** Aborting it stops the wait and deletes the request object. */
  signal?: AbortSignal;
  /** Labels the CertificateSigningRequest object carries while it exists. */
  tenant?: string;
}

/**
 * Has one cluster sign a certificate request through its CertificateSigningRequest API
 * (created, approved under tenantry's policy, collected, deleted) and returns the certificate
 * with its expiry.
 */
export async function signCertificateRequest(
  kc: KubeConfig,
  options: SignCertificateRequestOptions,
): Promise<{ certPem: string; notAfter: Date }> {
  const expirationSeconds = options.expirationSeconds ?? DEFAULT_EXPIRATION_SECONDS;
  const request = await checkUserCertificateRequest(options.certificateRequest, options.username, {
    ...(options.allowedGroups ? { allowedGroups: options.allowedGroups } : {}),
    expirationSeconds,
  });
  const certPem = await signOnCluster(kc.makeApiClient(CertificatesV1Api), {
    username: options.username,
    ...(options.tenant ? { tenant: options.tenant } : {}),
    csrPem: request.pem,
    expirationSeconds,
    timeoutMs: options.timeoutMs ?? 30_000,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { certPem, notAfter: certificateDetails(certPem).notAfter };
}
