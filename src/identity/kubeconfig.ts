import { randomBytes } from "node:crypto";
import { readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { parse } from "yaml";
import { UserError } from "../common/index.js";
import { type ClusterClient, kubeconfigYaml } from "../kube/index.js";
import { createCertificateRequest } from "../pki/index.js";
import {
  type CertificateDetails,
  certificateDetails,
  type IssuedUserCertificates,
  issueUserCertificates,
  type UserCredentials,
} from "./user-certificates.js";

/** Top-level kubeconfig extension recording what a renewal needs to issue the same certificates again. */
export const KUBECONFIG_EXTENSION = "tenantry.dev/user-certificate";

export interface UserKubeconfigMetadata {
  username: string;
  tenant: string;
  groups: string[];
  expirationSeconds: number;
  /** The PEM request the clusters signed: public, and lets a renewal keep the key. */
  certificateRequest: string;
  /** The user's own key file, when they brought their own request. */
  clientKeyFile?: string;
}

/** `<cluster>/<namespace>`: kubectl takes `/` in context names (`--context home/acme-dev`). */
export function contextName(cluster: string, namespace: string): string {
  return `${cluster}/${namespace}`;
}

/** Qualified with the cluster, as ClusterClient names users, so credentials never mix clusters. */
export function userEntryName(cluster: string, username: string): string {
  return `${cluster}/${username}`;
}

const b64 = (text: string) => Buffer.from(text).toString("base64");

/**
 * One kubeconfig for a user across clusters: per cluster a cluster entry (server and CA from the
 * admin's kubeconfig) and a user entry (that cluster's certificate and the key), and a context
 * per namespace of the tenant there. The first cluster's first namespace is current.
 */
export function renderUserKubeconfig(
  issued: IssuedUserCertificates,
  options: { clientKeyFile?: string } = {},
): string {
  const key = issued.keyPem
    ? { keyData: b64(issued.keyPem) }
    : options.clientKeyFile
      ? { keyFile: resolve(options.clientKeyFile) }
      : {};
  const metadata: UserKubeconfigMetadata = {
    username: issued.username,
    tenant: issued.tenant,
    groups: issued.groups,
    expirationSeconds: issued.expirationSeconds,
    certificateRequest: issued.certificateRequest,
    ...(!issued.keyPem && options.clientKeyFile ? { clientKeyFile: resolve(options.clientKeyFile) } : {}),
  };
  const contexts = issued.clusters.flatMap((c) =>
    c.namespaces.map((namespace) => ({
      name: contextName(c.cluster, namespace),
      cluster: {
        name: c.cluster,
        server: c.server,
        ...(c.caData ? { caData: c.caData } : {}),
        ...(c.tlsServerName ? { tlsServerName: c.tlsServerName } : {}),
        ...(c.insecureSkipTlsVerify ? { insecureSkipTlsVerify: true } : {}),
      },
      user: { name: userEntryName(c.cluster, issued.username), certData: b64(c.certPem), ...key },
      namespace,
    })),
  );
  return kubeconfigYaml(contexts, [{ name: KUBECONFIG_EXTENSION, extension: metadata }]);
}

/**
 * Writes a kubeconfig readable only by its owner, all or nothing: a reader (or a failure half-way)
 * never sees a partial file, and an existing file keeps its content until the new one is complete.
 */
export async function writeKubeconfigFile(path: string, text: string): Promise<void> {
  const temporary = `${path}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    await writeFile(temporary, text, { mode: 0o600, flag: "wx" });
    await rename(temporary, path);
  } catch (err) {
    await rm(temporary, { force: true });
    throw err;
  }
}

interface RawKubeconfig {
  clusters?: { name: string; cluster?: Record<string, unknown> }[];
  users?: { name: string; user?: Record<string, unknown> }[];
  contexts?: { name: string; context?: { cluster?: string; user?: string; namespace?: string } }[];
  extensions?: { name: string; extension?: unknown }[];
}

async function readRaw(path: string): Promise<RawKubeconfig> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new UserError(
      `${path}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (err as Error).message}`,
    );
  }
  const raw = parse(text) as RawKubeconfig | null;
  if (!raw || typeof raw !== "object") throw new UserError(`${path} is not a kubeconfig`);
  return raw;
}

function readable<T>(path: string, user: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw new UserError(
      `${path}: user "${user}": the client certificate is not a PEM certificate (${(err as Error).message})`,
    );
  }
}

export interface KubeconfigCertificate extends CertificateDetails {
  /** The user entry's name. */
  user: string;
  /** Clusters whose contexts use this user entry. */
  clusters: string[];
  contexts: string[];
}

/** Per user entry with a client certificate: subject, groups, validity and whether to renew. */
export async function kubeconfigCertificates(
  path: string,
  now = new Date(),
): Promise<KubeconfigCertificate[]> {
  const raw = await readRaw(path);
  const rows: KubeconfigCertificate[] = [];
  for (const entry of raw.users ?? []) {
    const user = entry.user ?? {};
    let certPem: string | undefined;
    if (typeof user["client-certificate-data"] === "string") {
      certPem = Buffer.from(user["client-certificate-data"], "base64").toString();
    } else if (typeof user["client-certificate"] === "string") {
      certPem = await readFile(resolve(dirname(path), user["client-certificate"]), "utf8");
    }
    if (!certPem) continue;
    const contexts = (raw.contexts ?? []).filter((c) => c.context?.user === entry.name);
    rows.push({
      user: entry.name,
      clusters: [...new Set(contexts.map((c) => c.context?.cluster ?? ""))].filter(Boolean),
      contexts: contexts.map((c) => c.name),
      ...readable(path, entry.name, () => certificateDetails(certPem, now)),
    });
  }
  return rows;
}

export interface UserKubeconfigFile {
  metadata: UserKubeconfigMetadata;
  /** Cluster entry names, in file order. */
  clusters: string[];
  /** The private key embedded in the file, if any. */
  keyPem?: string;
}

export async function readUserKubeconfig(path: string): Promise<UserKubeconfigFile> {
  const raw = await readRaw(path);
  const metadata = raw.extensions?.find((e) => e.name === KUBECONFIG_EXTENSION)?.extension as
    | UserKubeconfigMetadata
    | undefined;
  if (!metadata?.username || !metadata.tenant || !metadata.certificateRequest) {
    throw new UserError(
      `${path} was not issued by \`tenantry user certificate\` (it has no ${KUBECONFIG_EXTENSION} extension)`,
    );
  }
  const keyData = (raw.users ?? [])
    .map((u) => u.user?.["client-key-data"])
    .find((k): k is string => typeof k === "string");
  return {
    metadata: { ...metadata, groups: metadata.groups ?? [] },
    clusters: (raw.clusters ?? []).map((c) => c.name),
    ...(keyData ? { keyPem: Buffer.from(keyData, "base64").toString() } : {}),
  };
}

export interface RenewOptions {
  /** Admin clients of the clusters the file names. */
  clusters: (names: string[]) => ClusterClient[] | Promise<ClusterClient[]>;
  /** A new key pair instead of the one the file holds. */
  newKey?: boolean;
  expirationSeconds?: number;
  maxExpirationSeconds?: number;
  timeoutMs?: number;
  onProgress?: (cluster: string, message: string) => void;
}

/**
 * Issues a kubeconfig's certificates again, for the same user, tenant, groups and clusters (and
 * the tenant's namespaces there now), and rewrites the file. Keeps the key unless `newKey`; the
 * file is untouched if any cluster fails.
 */
export async function renewUserKubeconfig(
  path: string,
  options: RenewOptions,
): Promise<IssuedUserCertificates> {
  const file = await readUserKubeconfig(path);
  const { metadata } = file;
  let certificateRequest = metadata.certificateRequest;
  let keyPem = file.keyPem;
  if (options.newKey) {
    ({ csrPem: certificateRequest, keyPem } = await createCertificateRequest(
      metadata.username,
      metadata.groups,
    ));
  } else if (!keyPem && !metadata.clientKeyFile) {
    throw new UserError(`${path} holds no private key and names no key file: renew with --new-key`);
  }
  const issued = await issueUserCertificates({
    username: metadata.username,
    tenant: metadata.tenant,
    groups: metadata.groups,
    clusters: await options.clusters(file.clusters),
    certificateRequest,
    ...(keyPem ? { keyPem } : {}),
    expirationSeconds: options.expirationSeconds ?? metadata.expirationSeconds,
    ...(options.maxExpirationSeconds ? { maxExpirationSeconds: options.maxExpirationSeconds } : {}),
    ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  const keyFile = options.newKey ? undefined : metadata.clientKeyFile;
  await writeKubeconfigFile(path, renderUserKubeconfig(issued, keyFile ? { clientKeyFile: keyFile } : {}));
  return issued;
}

/** A kubeconfig for the user: the cluster's server and CA from `admin`, the user's certificate. */
export function userKubeconfig(
  admin: KubeConfig,
  credentials: UserCredentials,
  options: { cluster: string; namespace?: string },
): string {
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error("the admin kubeconfig has no current cluster");
  const context = `${options.cluster}-${credentials.username}`.replace(/[^\w.-]/g, "_");
  return kubeconfigYaml([
    {
      name: context,
      cluster: {
        name: options.cluster,
        server: cluster.server,
        ...(cluster.caData ? { caData: cluster.caData } : {}),
      },
      user: { name: context, certData: b64(credentials.certPem), keyData: b64(credentials.keyPem) },
      ...(options.namespace ? { namespace: options.namespace } : {}),
    },
  ]);
}
