/**
 * Open-loop HTTPS load generator, run as its own process so that its timers and TLS work do not
 * share an event loop with the server it measures. Reads a LoadPlan as JSON on stdin, writes a
 * LoadResult as JSON on stdout.
 *
 * Open loop: request i is due at start + i/rate whatever happened to earlier ones, and its latency
 * counts from when it was due, so a slow server cannot hide its queueing by slowing the sender.
 */

import { randomUUID } from "node:crypto";
import { Agent } from "node:https";
import { performance } from "node:perf_hooks";
import { openLoop } from "../support/open-loop.js";
import { postJson } from "../support/post.js";

export interface WebhookTarget {
  namespace: string;
  username: string;
}

export interface LoadPlan {
  rate: number;
  /** Instead of a rate: this many requests, all due at once. */
  burst?: number;
  durationMs: number;
  timeoutMs: number;
  /** Most connections open at once. */
  connections: number;
  caPem: string;
  /** Admission webhooks, called as the API server calls them: mutating in order, then validating in parallel. */
  webhooks?: {
    mutating: { name: string; url: string }[];
    validating: { name: string; url: string }[];
    targets: WebhookTarget[];
    /** The client certificate presented, as kube-apiserver presents its webhook client certificate. */
    client: { certPem: string; keyPem: string };
  };
  /** Pod creates through the API server, each as the user that owns the namespace. */
  apiserver?: {
    server: string;
    users: { certPem: string; keyPem: string }[];
    targets: { namespace: string; user: number }[];
    /** A 403 whose body matches this is a denial; anything else that is not 201 is an error. */
    denied: string;
  };
}

export interface LoadResult {
  due: number;
  completed: number;
  allowed: number;
  denied: number;
  errors: number;
  errorSamples: string[];
  elapsedMs: number;
  /** End-to-end latency of each completed request, ms. */
  latencies: number[];
  allowedLatencies: number[];
  deniedLatencies: number[];
  /** Latency of each call, per webhook name (webhook mode). */
  perWebhook: Record<string, number[]>;
}

interface JsonPatchOperation {
  op: string;
  path: string;
  value?: unknown;
}

function applyPatch(target: Record<string, unknown>, patch: JsonPatchOperation[]): void {
  for (const operation of patch) {
    const segments = operation.path
      .split("/")
      .slice(1)
      .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
    const last = segments.pop();
    if (last === undefined) continue;
    let parent = target as Record<string, unknown> | unknown[];
    for (const segment of segments) parent = (parent as Record<string, unknown>)[segment] as typeof parent;
    if (Array.isArray(parent)) {
      const index = last === "-" ? parent.length : Number(last);
      if (operation.op === "add") parent.splice(index, 0, operation.value);
      else if (operation.op === "replace") parent[index] = operation.value;
      else if (operation.op === "remove") parent.splice(index, 1);
    } else if (operation.op === "remove") {
      delete parent[last];
    } else {
      parent[last] = operation.value;
    }
  }
}

function pod(namespace: string, name: string): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, labels: { app: "bench" } },
    spec: {
      containers: [
        {
          name: "app",
          image: "registry.k8s.io/pause:3.10",
          resources: {
            requests: { cpu: "10m", memory: "16Mi" },
            limits: { cpu: "10m", memory: "16Mi" },
          },
        },
      ],
    },
  };
}

async function run(plan: LoadPlan): Promise<LoadResult> {
  const result: LoadResult = {
    due: 0,
    completed: 0,
    allowed: 0,
    denied: 0,
    errors: 0,
    errorSamples: [],
    elapsedMs: 0,
    latencies: [],
    allowedLatencies: [],
    deniedLatencies: [],
    perWebhook: {},
  };
  const fail = (message: string) => {
    result.errors++;
    if (result.errorSamples.length < 5 && !result.errorSamples.includes(message))
      result.errorSamples.push(message);
  };
  // Like the API server's own client, a bounded pool of keep-alive connections: requests beyond it
  // wait here (their latency still counts from when they were due) instead of piling up unbounded
  // work in the server that nobody waits for once they time out.
  const agentOptions = { keepAlive: true, maxSockets: plan.connections, ca: plan.caPem };
  const webhookClient = plan.webhooks?.client;
  const webhookAgent = new Agent({
    ...agentOptions,
    ...(webhookClient ? { cert: webhookClient.certPem, key: webhookClient.keyPem } : {}),
  });
  const userAgents = (plan.apiserver?.users ?? []).map(
    (u) => new Agent({ ...agentOptions, cert: u.certPem, key: u.keyPem }),
  );

  const callWebhook = async (
    name: string,
    url: string,
    object: Record<string, unknown>,
    t: WebhookTarget,
    deadline: number,
  ) => {
    const uid = randomUUID();
    const review = {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: {
        uid,
        kind: { group: "", version: "v1", kind: "Pod" },
        resource: { group: "", version: "v1", resource: "pods" },
        requestKind: { group: "", version: "v1", kind: "Pod" },
        requestResource: { group: "", version: "v1", resource: "pods" },
        name: (object.metadata as { name: string }).name,
        namespace: t.namespace,
        operation: "CREATE",
        userInfo: { username: t.username, groups: ["system:authenticated"] },
        object,
        oldObject: null,
        dryRun: false,
        options: { apiVersion: "meta.k8s.io/v1", kind: "CreateOptions" },
      },
    };
    const started = performance.now();
    const response = await postJson(url, JSON.stringify(review), webhookAgent, deadline);
    result.perWebhook[name] ??= [];
    result.perWebhook[name].push(performance.now() - started);
    if (response.status !== 200)
      throw new Error(`${name}: HTTP ${response.status} ${response.body.slice(0, 200)}`);
    const answer = JSON.parse(response.body) as {
      response?: { uid?: string; allowed?: boolean; patch?: string; status?: { message?: string } };
    };
    if (answer.response?.uid !== uid) throw new Error(`${name}: answer is not for this request`);
    return answer.response;
  };

  const admit = async (i: number, deadline: number): Promise<boolean> => {
    const { mutating, validating, targets } = plan.webhooks!;
    const target = targets[i % targets.length]!;
    const object = pod(target.namespace, `bench-${process.pid}-${i}`);
    for (const webhook of mutating) {
      const response = await callWebhook(webhook.name, webhook.url, object, target, deadline);
      if (!response.allowed) return false;
      if (response.patch) applyPatch(object, JSON.parse(Buffer.from(response.patch, "base64").toString()));
    }
    const answers = await Promise.all(
      validating.map((w) => callWebhook(w.name, w.url, object, target, deadline)),
    );
    return answers.every((a) => a.allowed);
  };

  const create = async (i: number, deadline: number): Promise<boolean> => {
    const { server, targets } = plan.apiserver!;
    const target = targets[i % targets.length]!;
    const body = JSON.stringify(pod(target.namespace, `e2e-${process.pid}-${i}`));
    const response = await postJson(
      `${server}/api/v1/namespaces/${target.namespace}/pods`,
      body,
      userAgents[target.user]!,
      deadline,
    );
    if (response.status === 201) return true;
    if (response.status === 403 && new RegExp(plan.apiserver!.denied).test(response.body)) return false;
    throw new Error(`HTTP ${response.status} ${response.body.slice(0, 300)}`);
  };

  const one = plan.webhooks ? admit : create;
  const total = plan.burst ?? Math.round((plan.rate * plan.durationMs) / 1000);
  result.due = total;
  result.elapsedMs = await openLoop({
    total,
    intervalMs: plan.burst ? 0 : 1000 / plan.rate,
    timeoutMs: plan.timeoutMs,
    send: one,
    onAnswer: (allowed, latency) => {
      result.completed++;
      result.latencies.push(latency);
      if (allowed) {
        result.allowed++;
        result.allowedLatencies.push(latency);
      } else {
        result.denied++;
        result.deniedLatencies.push(latency);
      }
    },
    onError: (err) => fail(err.message),
  });
  webhookAgent.destroy();
  for (const agent of userAgents) agent.destroy();
  return result;
}

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const plan = JSON.parse(Buffer.concat(chunks).toString()) as LoadPlan;
process.stdout.write(JSON.stringify(await run(plan)));
