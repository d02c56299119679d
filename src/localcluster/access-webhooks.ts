import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { stringify } from "yaml";
import { AUTHENTICATE_PATH, AUTHORIZE_PATH } from "../identity/index.js";
import {
  createCertificateAuthority,
  issueCertificate,
  type KeyPairPem,
  loadCertificateAuthority,
} from "../pki/index.js";
import type { ClusterPki } from "./cluster-pki.js";

/**
 * Where kube-apiserver asks tenantry about tokens (TokenReview) and permissions
 * (SubjectAccessReview). The API server needs these at start, before tenantry runs, so the cluster
 * fixes the port and signs the serving certificate with its own CA; tenantry serves them later.
 */
export interface AccessWebhooks {
  /** Base URL; TokenReviews go to `/authenticate`, SubjectAccessReviews to `/authorize`. */
  url: string;
  host: string;
  port: number;
  /** Serving certificate and key for that address, signed by the cluster CA (which clients trust). */
  certFile: string;
  keyFile: string;
  caFile: string;
  /**
   * The CA of the client certificate kube-apiserver presents to the webhooks (a CA of its own,
   * signing nothing else), and that certificate: tenantry answers reviews only over it.
   */
  clientCaFile: string;
  clientCertFile: string;
  clientKeyFile: string;
}

/** How long kube-apiserver reuses answers: a revoked token or grant stops working within this. */
export const ACCESS_CACHE_TTL_SECONDS = { authenticated: 10, authorized: 10, unauthorized: 5 };

async function ensureServingPair(pki: ClusterPki): Promise<{ certFile: string; keyFile: string }> {
  const certFile = join(pki.dir, "access-webhooks.crt");
  const keyFile = join(pki.dir, "access-webhooks.key");
  if (!existsSync(certFile) || !existsSync(keyFile)) {
    const ca = await loadCertificateAuthority({
      certPem: pki.caPem,
      keyPem: await readFile(pki.caKey, "utf8"),
    });
    const pair: KeyPairPem = await issueCertificate(ca, {
      commonName: "tenantry-access-webhooks",
      dnsNames: ["localhost"],
      ipAddresses: ["127.0.0.1"],
      usage: "server",
      validDays: 3650,
    });
    await writeFile(certFile, pair.certPem);
    await writeFile(keyFile, pair.keyPem, { mode: 0o600 });
  }
  return { certFile, keyFile };
}

/** The client certificate kube-apiserver calls the webhooks with, from a CA that signs nothing else. */
async function ensureClientPair(
  pki: ClusterPki,
): Promise<{ clientCaFile: string; clientCertFile: string; clientKeyFile: string }> {
  const clientCaFile = join(pki.dir, "access-webhooks-client-ca.crt");
  const clientCertFile = join(pki.dir, "access-webhooks-client.crt");
  const clientKeyFile = join(pki.dir, "access-webhooks-client.key");
  if (!existsSync(clientCaFile) || !existsSync(clientCertFile) || !existsSync(clientKeyFile)) {
    const ca = await createCertificateAuthority("tenantry-access-webhooks-client-ca");
    const pair = await issueCertificate(ca, {
      commonName: "kube-apiserver",
      usage: "client",
      validDays: 3650,
    });
    await writeFile(clientCaFile, ca.certPem);
    await writeFile(clientCertFile, pair.certPem);
    await writeFile(clientKeyFile, pair.keyPem, { mode: 0o600 });
  }
  return { clientCaFile, clientCertFile, clientKeyFile };
}

function webhookKubeconfig(
  server: string,
  caFile: string,
  client: { clientCertFile: string; clientKeyFile: string },
): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "tenantry", cluster: { server, "certificate-authority": caFile } }],
    users: [
      {
        name: "kube-apiserver",
        user: { "client-certificate": client.clientCertFile, "client-key": client.clientKeyFile },
      },
    ],
    contexts: [{ name: "tenantry", context: { cluster: "tenantry", user: "kube-apiserver" } }],
    "current-context": "tenantry",
  });
}

/**
 * Only namespaced resource requests of people and tenant workloads, and their requests about worker
 * nodes on demand (cluster-scoped WorkerNodes and NodeProviders, which tenantry authorizes per
 * owner), reach the authorization webhook: the cluster's own components (every `system:` user
 * except service accounts outside the `kube-` namespaces) never wait on it, so a tenantry outage
 * cannot stall the cluster.
 */
const AUTHORIZATION_MATCH_CONDITIONS = [
  {
    expression:
      "!request.user.startsWith('system:') || (request.user.startsWith('system:serviceaccount:') && !request.user.startsWith('system:serviceaccount:kube-'))",
  },
  {
    expression:
      "has(request.resourceAttributes) && (request.resourceAttributes.namespace != '' || (request.resourceAttributes.group == 'tenantry.dev' && request.resourceAttributes.resource in ['workernodes', 'nodeproviders']))",
  },
];

/**
 * Writes the two files kube-apiserver reads and returns its flags: a token webhook for
 * authentication, and a structured authorization configuration that asks tenantry after the Node
 * authorizer and before RBAC, so tenantry can deny (user-level isolation) as well as allow
 * (cross-tenant grants). For matched requests an unreachable tenantry means "deny": isolation holds.
 */
export async function configureAccessWebhooks(
  pki: ClusterPki,
  dir: string,
  port: number,
): Promise<{ webhooks: AccessWebhooks; flags: string[] }> {
  await mkdir(dir, { recursive: true });
  const { certFile, keyFile } = await ensureServingPair(pki);
  const client = await ensureClientPair(pki);
  const host = "127.0.0.1";
  const url = `https://${host}:${port}`;
  const authnKubeconfig = join(dir, "authentication-webhook.kubeconfig");
  const authzKubeconfig = join(dir, "authorization-webhook.kubeconfig");
  const authzConfig = join(dir, "authorization-config.yaml");
  await writeFile(authnKubeconfig, webhookKubeconfig(`${url}${AUTHENTICATE_PATH}`, pki.caCert, client));
  await writeFile(authzKubeconfig, webhookKubeconfig(`${url}${AUTHORIZE_PATH}`, pki.caCert, client));
  await writeFile(
    authzConfig,
    stringify({
      apiVersion: "apiserver.config.k8s.io/v1",
      kind: "AuthorizationConfiguration",
      authorizers: [
        { type: "Node", name: "node" },
        {
          type: "Webhook",
          name: "tenantry",
          webhook: {
            timeout: "3s",
            subjectAccessReviewVersion: "v1",
            matchConditionSubjectAccessReviewVersion: "v1",
            failurePolicy: "Deny",
            authorizedTTL: `${ACCESS_CACHE_TTL_SECONDS.authorized}s`,
            unauthorizedTTL: `${ACCESS_CACHE_TTL_SECONDS.unauthorized}s`,
            connectionInfo: { type: "KubeConfigFile", kubeConfigFile: authzKubeconfig },
            matchConditions: AUTHORIZATION_MATCH_CONDITIONS,
          },
        },
        { type: "RBAC", name: "rbac" },
      ],
    }),
  );
  return {
    webhooks: { url, host, port, certFile, keyFile, caFile: pki.caCert, ...client },
    flags: [
      `--authentication-token-webhook-config-file=${authnKubeconfig}`,
      "--authentication-token-webhook-version=v1",
      `--authentication-token-webhook-cache-ttl=${ACCESS_CACHE_TTL_SECONDS.authenticated}s`,
      `--authorization-config=${authzConfig}`,
    ],
  };
}
