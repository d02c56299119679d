import type { ClusterClient } from "../../src/kube/index.js";
import { entriesCalledFor, podCreateRequest, type WebhookEntry } from "../../testing/admission-entries.js";
import { runLoad } from "./load.js";
import type { LoadPlan, LoadResult } from "./loadgen.js";
import type { BenchUser } from "./users.js";

export interface WebhookChain {
  mutating: { name: string; url: string }[];
  validating: { name: string; url: string }[];
  caPem: string;
  /** kube-apiserver's webhook client certificate: tenantry answers admission reviews over it only. */
  client: { certPem: string; keyPem: string };
}

/**
 * The webhooks the API server calls for a tenant user's pod CREATE in `namespace` (rules, namespace
 * and object selectors, match conditions), read from the configurations tenantry registered, so the
 * benchmark calls exactly what kube-apiserver would.
 */
export async function podCreateChain(
  client: ClusterClient,
  webhookClient: { certPem: string; keyPem: string },
  target: { namespace: string; username: string },
): Promise<WebhookChain> {
  const labels = (await client.core.readNamespace({ name: target.namespace })).metadata?.labels ?? {};
  const called = await entriesCalledFor(
    client.kubeConfig,
    podCreateRequest(target.namespace, target.username),
    labels,
  );
  const all = [...called.mutating, ...called.validating];
  const caBundle = all.find((w) => w.clientConfig.caBundle)?.clientConfig.caBundle;
  if (!caBundle) throw new Error("tenantry registered no webhook with a caBundle");
  // Both ways may be one entry name: the rows say which call they time.
  const pick = (way: string, list: WebhookEntry[]) =>
    list
      .filter((w) => w.clientConfig.url)
      .map((w) => ({ name: `${way} ${w.name}`, url: w.clientConfig.url! }));
  return {
    mutating: pick("mutating", called.mutating),
    validating: pick("validating", called.validating),
    caPem: Buffer.from(caBundle, "base64").toString(),
    client: webhookClient,
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
    webhooks: { mutating: chain.mutating, validating: chain.validating, targets, client: chain.client },
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
