import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { stringify } from "yaml";
import { AUTHENTICATE_PATH, AUTHORIZE_PATH } from "../identity/index.js";
import { type KubeconfigUser, kubeconfigYaml, usersOnlyKubeconfigYaml } from "../kube/index.js";
import {
  createCertificateAuthority,
  issueCertificate,
  type KeyPairPem,
  loadCertificateAuthority,
} from "../pki/index.js";
import type { ClusterPki } from "./cluster-pki.js";

/**
 * The client certificate kube-apiserver presents to every webhook it calls (admission, token,
 * authorization), from a CA of its own that signs nothing else; tenantry answers only over it.
 */
export interface WebhookClient {
  caFile: string;
  certFile: string;
  keyFile: string;
}

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

/**
 * kube-apiserver's webhook client certificate, from a CA that signs nothing else (the files keep
 * their first names: clusters made before admission used it keep theirs).
 */
export async function ensureWebhookClient(pki: ClusterPki): Promise<WebhookClient> {
  const caFile = join(pki.dir, "access-webhooks-client-ca.crt");
  const certFile = join(pki.dir, "access-webhooks-client.crt");
  const keyFile = join(pki.dir, "access-webhooks-client.key");
  if (!existsSync(caFile) || !existsSync(certFile) || !existsSync(keyFile)) {
    const ca = await createCertificateAuthority("tenantry-access-webhooks-client-ca");
    const pair = await issueCertificate(ca, {
      commonName: "kube-apiserver",
      usage: "client",
      validDays: 3650,
    });
    await writeFile(caFile, ca.certPem);
    await writeFile(certFile, pair.certPem);
    await writeFile(keyFile, pair.keyPem, { mode: 0o600 });
  }
  return { caFile, certFile, keyFile };
}

/** The kubeconfig `users` entry that makes kube-apiserver present the webhook client certificate. */
function webhookUser(name: string, client: WebhookClient): KubeconfigUser {
  return { name, certFile: client.certFile, keyFile: client.keyFile };
}

/**
 * Writes kube-apiserver's admission configuration and returns its flags: the admission webhooks
 * are called with the webhook client certificate (a WebhookAdmissionConfiguration kubeconfig whose
 * `*` user matches every webhook host, as tenantry's port is chosen after kube-apiserver starts),
 * and NodeRestriction keeps kubelets to their own Node and mirror pods, away from their taints and
 * `node-restriction.kubernetes.io/` labels.
 */
export async function configureAdmissionWebhooks(
  pki: ClusterPki,
  dir: string,
): Promise<{ client: WebhookClient; flags: string[] }> {
  await mkdir(dir, { recursive: true });
  const client = await ensureWebhookClient(pki);
  const kubeconfig = join(dir, "admission-webhooks.kubeconfig");
  const config = join(dir, "admission-config.yaml");
  await writeFile(kubeconfig, usersOnlyKubeconfigYaml([webhookUser("*", client)]));
  const webhookConfiguration = {
    apiVersion: "apiserver.config.k8s.io/v1",
    kind: "WebhookAdmissionConfiguration",
    kubeConfigFile: kubeconfig,
  };
  await writeFile(
    config,
    stringify({
      apiVersion: "apiserver.config.k8s.io/v1",
      kind: "AdmissionConfiguration",
      plugins: ["ValidatingAdmissionWebhook", "MutatingAdmissionWebhook"].map((name) => ({
        name,
        configuration: webhookConfiguration,
      })),
    }),
  );
  return {
    client,
    flags: [`--admission-control-config-file=${config}`, "--enable-admission-plugins=NodeRestriction"],
  };
}

function webhookKubeconfig(server: string, caFile: string, client: WebhookClient): string {
  return kubeconfigYaml([
    {
      name: "tenantry",
      cluster: { name: "tenantry", server, caFile },
      user: webhookUser("kube-apiserver", client),
    },
  ]);
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
  const client = await ensureWebhookClient(pki);
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
    webhooks: {
      url,
      host,
      port,
      certFile,
      keyFile,
      caFile: pki.caCert,
      clientCaFile: client.caFile,
      clientCertFile: client.certFile,
      clientKeyFile: client.keyFile,
    },
    flags: [
      `--authentication-token-webhook-config-file=${authnKubeconfig}`,
      "--authentication-token-webhook-version=v1",
      `--authentication-token-webhook-cache-ttl=${ACCESS_CACHE_TTL_SECONDS.authenticated}s`,
      `--authorization-config=${authzConfig}`,
    ],
  };
}
