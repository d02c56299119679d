import assert from "node:assert/strict";
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import {
  BOOTSTRAP_NAMESPACE,
  WORKER_NODE_LABEL,
  type WorkerNode,
  type WorkerNodePhase,
} from "../../src/nodes/index.js";
import { TENANTRY_GROUP, TENANTS_API_VERSION, TENANTS_VERSION } from "../../src/tenants/index.js";
import { eventually } from "../support/eventually.js";
import { httpsJson } from "../support/https-json.js";

export const workerNodes = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: "workernodes" };

export function workerNodeManifest(name: string, spec: Partial<WorkerNode["spec"]>): string {
  return JSON.stringify({
    apiVersion: TENANTS_API_VERSION,
    kind: "WorkerNode",
    metadata: { name },
    spec: { flavor: "m1.small", provider: "simulated", policy: "private", ...spec },
  });
}

export function nodeClients(kc: KubeConfig) {
  return { custom: kc.makeApiClient(CustomObjectsApi), core: kc.makeApiClient(CoreV1Api) };
}

/** tenantry's bootstrap token Secrets for a WorkerNode's name. */
export async function bootstrapTokensOf(core: CoreV1Api, workerNode: string) {
  return (
    await core.listNamespacedSecret({
      namespace: BOOTSTRAP_NAMESPACE,
      labelSelector: `${WORKER_NODE_LABEL}=${workerNode}`,
    })
  ).items;
}

export async function readWorkerNode(kc: KubeConfig, name: string): Promise<WorkerNode | undefined> {
  try {
    return (await nodeClients(kc).custom.getClusterCustomObject({ ...workerNodes, name })) as WorkerNode;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

/** Waits until the WorkerNode is in `phase`; fails at once if it went Failed instead. */
export async function waitForPhase(
  kc: KubeConfig,
  name: string,
  phase: WorkerNodePhase,
  timeoutMs = 120_000,
): Promise<WorkerNode> {
  return eventually(
    async () => {
      const node = await readWorkerNode(kc, name);
      assert.ok(node, `WorkerNode ${name} exists`);
      assert.equal(
        node.status?.phase,
        phase,
        `${name}: ${node.status?.phase} ${node.status?.reason}: ${node.status?.message}`,
      );
      return node;
    },
    { timeoutMs, intervalMs: 250 },
  );
}

export async function waitForGone(kc: KubeConfig, name: string, timeoutMs = 120_000): Promise<void> {
  await eventually(
    async () => {
      const node = await readWorkerNode(kc, name);
      assert.equal(
        node,
        undefined,
        `WorkerNode ${name} still there: ${node?.status?.phase} ${node?.status?.message}`,
      );
    },
    { timeoutMs, intervalMs: 250 },
  );
}

/** An API server call with a bearer token of one's own (a bootstrap token, say): status and body. */
export function callWithToken(
  kc: KubeConfig,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: { message?: string } & Record<string, unknown> }> {
  const cluster = kc.getCurrentCluster()!;
  return httpsJson(new URL(path, cluster.server), {
    method,
    ca: Buffer.from(cluster.caData ?? "", "base64").toString(),
    headers: { authorization: `Bearer ${token}` },
    ...(body === undefined ? {} : { body }),
  });
}
