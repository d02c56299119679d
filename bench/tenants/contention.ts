import { CoreV1Api } from "@kubernetes/client-node";
import type { ClusterClient } from "../../src/kube/index.js";
import type { CertificateAuthority } from "../../src/pki/index.js";
import { percentile } from "../support/report.js";
import { apiserverLoad } from "./admission.js";
import { clusterUser } from "./users.js";
import {
  customObjects,
  isTenantReady,
  ownerOf,
  quotasResource,
  tenantObject,
  tenantsResource,
  until,
} from "./workload.js";

export interface ContentionResult {
  creates: number;
  limit: number;
  admitted: number;
  denied: number;
  errors: number;
  errorSamples: string[];
  podsExisting: number;
  admittedLatencies: number[];
  deniedLatencies: number[];
  wallMs: number;
}

const SHORT_NAMES = ["a", "b", "c", "d", "e"];

/**
 * `creates` pod creates fired at once by the tenant owner through the API server, spread over the
 * tenant's 5 namespaces, against a TenantResourceQuota of `limit` pods.
 */
export async function contention(options: {
  client: ClusterClient;
  ca: CertificateAuthority;
  cluster: string;
  dir: string;
  creates: number;
  limit: number;
}): Promise<ContentionResult> {
  const { client, creates, limit } = options;
  const tenant = `quota-${creates}-${limit}`;
  const namespaces = SHORT_NAMES.map((n) => `${tenant}-${n}`);
  const api = customObjects(client);
  await api.createClusterCustomObject({
    ...tenantsResource,
    body: tenantObject(tenant, { namespaces: SHORT_NAMES, pods: limit }),
  });
  await until("tenant ready", 300_000, async () => {
    const t = await api.getClusterCustomObject({ ...tenantsResource, name: tenant });
    return isTenantReady(t as Parameters<typeof isTenantReady>[0], SHORT_NAMES.length) ? true : undefined;
  });
  // Quota starts from a counted zero, as it would for a tenant in use.
  await until("quota counted", 120_000, async () => {
    const q = (await api.getClusterCustomObject({ ...quotasResource, name: tenant })) as {
      status?: { used?: Record<string, string> };
    };
    return q.status?.used?.pods === "0" ? true : undefined;
  });
  const owner = await clusterUser({
    ca: options.ca,
    cluster: options.cluster,
    server: client.server,
    name: ownerOf(tenant),
    dir: options.dir,
  });
  const core = owner.kubeConfig.makeApiClient(CoreV1Api);
  await until("owner can act", 60_000, async () => {
    for (const namespace of namespaces) await core.listNamespacedPod({ namespace, limit: 1 });
    return true;
  });
  // Pods are refused until kube-controller-manager gives each new namespace its default
  // ServiceAccount, which after a thousand new tenants can come later than the tenant's Ready.
  await until("default service accounts", 300_000, async () => {
    for (const namespace of namespaces)
      await client.core.readNamespacedServiceAccount({ name: "default", namespace });
    return true;
  });

  // Sent from a separate process, so that a thousand TLS handshakes do not compete with tenantry here.
  const load = await apiserverLoad({
    server: client.server,
    caPem: options.ca.certPem,
    owners: [{ user: owner, namespaces }],
    rate: creates,
    durationMs: 1000,
    burst: creates,
    connections: creates,
    denied: "exceeded quota",
  });
  const result: ContentionResult = {
    creates,
    limit,
    admitted: load.allowed,
    denied: load.denied,
    errors: load.errors,
    errorSamples: load.errorSamples,
    podsExisting: 0,
    admittedLatencies: load.allowedLatencies,
    deniedLatencies: load.deniedLatencies,
    wallMs: load.elapsedMs,
  };
  // Count what really exists: the admitted answers could lie, the objects cannot.
  const admin = client.core;
  const lists = await Promise.all(namespaces.map((namespace) => admin.listNamespacedPod({ namespace })));
  result.podsExisting = lists.reduce((sum, l) => sum + l.items.length, 0);
  return result;
}

export function contentionRow(r: ContentionResult): (string | number)[] {
  return [
    String(r.creates),
    String(r.limit),
    String(r.admitted),
    String(r.podsExisting),
    String(Math.max(0, r.podsExisting - r.limit, r.admitted - r.limit)),
    String(r.denied),
    String(r.errors),
    percentile(r.admittedLatencies, 50),
    percentile(r.admittedLatencies, 99),
    percentile(r.deniedLatencies, 50),
    percentile(r.deniedLatencies, 99),
    r.wallMs / 1000,
  ];
}
