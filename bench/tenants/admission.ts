import { AdmissionregistrationV1Api, type V1RuleWithOperations } from "@kubernetes/client-node";
import type { ClusterClient } from "../../src/kube/index.js";
import { runLoad } from "./load.js";
import type { LoadPlan, LoadResult } from "./loadgen.js";
import type { BenchUser } from "./users.js";

export interface WebhookChain {
  mutating: { name: string; url: string }[];
  validating: { name: string; url: string }[];
  caPem: string;
}

function matchesPodCreate(rules: V1RuleWithOperations[] | undefined): boolean {
  const has = (list: string[] | undefined, ...values: string[]) =>
    (list ?? []).some((v) => values.includes(v));
  return (rules ?? []).some(
    (r) =>
      has(r.apiGroups, "", "*") &&
      has(r.apiVersions, "v1", "*") &&
      has(r.operations, "CREATE", "*") &&
      has(r.resources, "pods", "*", "*/*") &&
      r.scope !== "Cluster",
  );
}

/**
 * The webhooks the API server would call for a pod CREATE in a tenant namespace, read from the
 * webhook configurations tenantry registered, so the benchmark follows whatever tenantry serves.
 */
export async function podCreateChain(client: ClusterClient): Promise<WebhookChain> {
  const api = client.kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const selector = { labelSelector: "app.kubernetes.io/managed-by=tenantry" };
  const mutating = (await api.listMutatingWebhookConfiguration(selector)).items.flatMap(
    (c) => c.webhooks ?? [],
  );
  const validating = (await api.listValidatingWebhookConfiguration(selector)).items.flatMap(
    (c) => c.webhooks ?? [],
  );
  const all = [...mutating, ...validating];
  const caBundle = all.find((w) => w.clientConfig.caBundle)?.clientConfig.caBundle;
  if (!caBundle) throw new Error("tenantry registered no webhook with a caBundle");
  const pick = (list: typeof all) =>
    list
      .filter((w) => matchesPodCreate(w.rules) && w.clientConfig.url)
      .map((w) => ({ name: w.name, url: w.clientConfig.url! }));
  return {
    mutating: pick(mutating),
    validating: pick(validating),
    caPem: Buffer.from(caBundle, "base64").toString(),
  };
}

/** Pod CREATE AdmissionReviews straight to tenantry's webhook server at a fixed open-loop rate. */
export function webhookLoad(
  chain: WebhookChain,
  targets: { namespace: string; username: string }[],
  rate: number,
  durationMs: number,
  connections = 128,
): Promise<LoadResult> {
  const plan: LoadPlan = {
    rate,
    durationMs,
    timeoutMs: 10_000,
    connections,
    caPem: chain.caPem,
    webhooks: { mutating: chain.mutating, validating: chain.validating, targets },
  };
  return runLoad(plan);
}

/** Pod creates through the API server, each by the owner of the namespace, at a fixed open-loop rate. */
export function apiserverLoad(options: {
  server: string;
  caPem: string;
  owners: { user: BenchUser; namespaces: string[] }[];
  rate: number;
  durationMs: number;
  /** All requests due at once instead of at a rate. */
  burst?: number;
  denied?: string;
  connections?: number;
}): Promise<LoadResult> {
  const users = options.owners.map(({ user }) => {
    const entry = user.kubeConfig.getCurrentUser()!;
    return {
      certPem: Buffer.from(entry.certData!, "base64").toString(),
      keyPem: Buffer.from(entry.keyData!, "base64").toString(),
    };
  });
  // Consecutive requests go to different owners, as independent teams would send them.
  const depth = Math.max(...options.owners.map((o) => o.namespaces.length));
  const targets: { namespace: string; user: number }[] = [];
  for (let n = 0; n < depth; n++) {
    options.owners.forEach((o, user) => {
      const namespace = o.namespaces[n];
      if (namespace) targets.push({ namespace, user });
    });
  }
  return runLoad({
    rate: options.rate,
    durationMs: options.durationMs,
    ...(options.burst ? { burst: options.burst } : {}),
    timeoutMs: 60_000,
    connections: options.connections ?? 128,
    caPem: options.caPem,
    apiserver: { server: options.server, users, targets, denied: options.denied ?? "denied the request" },
  });
}

/**
 * Waits until the webhook server answers a pod CREATE promptly again, so that a step's backlog
 * (work the server still does for requests already given up on) does not leak into the next
 * step; returns how long that took, in ms.
 */
export async function drain(
  chain: WebhookChain,
  target: { namespace: string; username: string },
  limitMs = 300_000,
): Promise<number> {
  const started = Date.now();
  for (;;) {
    const probe = await webhookLoad(chain, [target], 2, 1000);
    if (probe.errors === 0 && Math.max(...probe.latencies) < 1000) return Date.now() - started;
    if (Date.now() - started > limitMs) return Number.NaN;
  }
}
