import { setTimeout as sleep } from "node:timers/promises";
import {
  CertificatesV1Api,
  type KubeConfig,
  type V1CertificateSigningRequest,
} from "@kubernetes/client-node";
import { stringify } from "yaml";
import { UserError } from "../common/index.js";
import { createCertificateRequest } from "../pki/index.js";

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

const USERNAME = /^[^\s,/+"\\<>;=]{1,256}$/;

/**
 * Has the cluster itself sign a client certificate for a user, through the CertificateSigningRequest
 * API with signer kubernetes.io/kube-apiserver-client: tenantry creates the request, approves it
 * (as its policy allows) and collects the certificate. The private key never leaves this process.
 */
export async function requestUserCertificate(
  kc: KubeConfig,
  options: UserCertificateOptions,
): Promise<UserCredentials> {
  if (!USERNAME.test(options.username)) {
    throw new UserError(
      `username "${options.username}" must be 1 to 256 characters without spaces or any of , / + " \\ < > ; =`,
    );
  }
  const api = kc.makeApiClient(CertificatesV1Api);
  const { csrPem, keyPem } = await createCertificateRequest(options.username, options.groups ?? []);
  const name = `tenantry-${options.username
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, "-")
    .slice(0, 200)}-${Date.now().toString(36)}`;
  const csr: V1CertificateSigningRequest = {
    metadata: { name, labels: { "app.kubernetes.io/managed-by": "tenantry" } },
    spec: {
      request: Buffer.from(csrPem).toString("base64"),
      signerName: "kubernetes.io/kube-apiserver-client",
      usages: ["client auth", "digital signature"],
      expirationSeconds: options.expirationSeconds ?? 7 * 24 * 3600,
    },
  };
  await api.createCertificateSigningRequest({ body: csr });
  try {
    const created = await api.readCertificateSigningRequest({ name });
    created.status = {
      ...created.status,
      conditions: [
        {
          type: "Approved",
          status: "True",
          reason: "TenantryApproved",
          message: `approved by tenantry for ${options.username}`,
          lastUpdateTime: new Date(),
        },
      ],
    };
    await api.replaceCertificateSigningRequestApproval({ name, body: created });
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    for (;;) {
      const current = await api.readCertificateSigningRequest({ name });
      const failed = current.status?.conditions?.find((c) => c.type === "Failed" || c.type === "Denied");
      if (failed)
        throw new Error(
          `CertificateSigningRequest ${name} ${failed.type.toLowerCase()}: ${failed.message ?? failed.reason}`,
        );
      if (current.status?.certificate) {
        const certPem = Buffer.from(current.status.certificate, "base64").toString();
        return { username: options.username, certPem, keyPem };
      }
      if (Date.now() > deadline)
        throw new Error(
          `CertificateSigningRequest ${name} was approved but not signed in time: is kube-controller-manager signing?`,
        );
      await sleep(200);
    }
  } finally {
    // The certificate is in hand (or failed); the request object has served its purpose.
    await api.deleteCertificateSigningRequest({ name }).catch(() => {});
  }
}

/** A kubeconfig for the user: the cluster's server and CA from `admin`, the user's certificate. */
export function userKubeconfig(
  admin: KubeConfig,
  credentials: UserCredentials,
  options: { cluster: string; namespace?: string },
): string {
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error("the admin kubeconfig has no current cluster");
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const context = `${options.cluster}-${credentials.username}`.replace(/[^\w.-]/g, "_");
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: options.cluster,
        cluster: { server: cluster.server, "certificate-authority-data": cluster.caData },
      },
    ],
    users: [
      {
        name: context,
        user: {
          "client-certificate-data": b64(credentials.certPem),
          "client-key-data": b64(credentials.keyPem),
        },
      },
    ],
    contexts: [
      {
        name: context,
        context: {
          cluster: options.cluster,
          user: context,
          ...(options.namespace ? { namespace: options.namespace } : {}),
        },
      },
    ],
    "current-context": context,
  });
}
