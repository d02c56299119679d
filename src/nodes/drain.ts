/**
 * Draining a node before it goes, as `kubectl drain` does: cordon it, then evict its pods through
 * the Eviction API, so PodDisruptionBudgets are respected (an eviction they forbid answers 429 and
 * is tried again later). DaemonSet pods and mirror pods are left: they go with the node.
 */
import type { V1Node, V1Pod } from "@kubernetes/client-node";
import { type ClusterClient, ignoreNotFound, isNotFound, statusCode, statusOf } from "../kube/index.js";

export interface DrainProgress {
  /** Pods still on the node (terminating ones included). */
  remaining: string[];
  /** Pods whose eviction a PodDisruptionBudget refused, with the API server's reason. */
  blocked: { pod: string; reason: string }[];
}

function podName(pod: V1Pod): string {
  return `${pod.metadata?.namespace}/${pod.metadata?.name}`;
}

/** Pods a drain evicts: not mirror pods (the kubelet's), not DaemonSet pods (they go with the node). */
export function evictable(pod: V1Pod): boolean {
  if (pod.metadata?.annotations?.["kubernetes.io/config.mirror"]) return false;
  if (pod.metadata?.ownerReferences?.some((o) => o.kind === "DaemonSet" && o.controller)) return false;
  return !["Succeeded", "Failed"].includes(pod.status?.phase ?? "");
}

/** Marks the node unschedulable (kubectl cordon). */
export async function cordon(client: ClusterClient, node: V1Node): Promise<void> {
  if (node.spec?.unschedulable) return;
  await ignoreNotFound(
    client.objects.jsonPatch(node, [{ op: "add", path: "/spec/unschedulable", value: true }]),
  );
}

/** One pass of evictions over the node's pods; call again until nothing remains. */
export async function evictPods(client: ClusterClient, nodeName: string): Promise<DrainProgress> {
  const pods = await client.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` });
  const progress: DrainProgress = { remaining: [], blocked: [] };
  await Promise.all(
    pods.items.filter(evictable).map(async (pod) => {
      const name = podName(pod);
      progress.remaining.push(name);
      if (pod.metadata?.deletionTimestamp) return;
      try {
        await client.core.createNamespacedPodEviction({
          name: pod.metadata!.name!,
          namespace: pod.metadata!.namespace!,
          body: {
            apiVersion: "policy/v1",
            kind: "Eviction",
            metadata: { name: pod.metadata!.name!, namespace: pod.metadata!.namespace! },
          },
        });
      } catch (err) {
        if (isNotFound(err)) {
          progress.remaining.splice(progress.remaining.indexOf(name), 1);
          return;
        }
        if (statusCode(err) === 429) {
          progress.blocked.push({ pod: name, reason: statusOf(err)?.message ?? "too many requests" });
          return;
        }
        throw err;
      }
    }),
  );
  progress.remaining.sort();
  progress.blocked.sort((a, b) => a.pod.localeCompare(b.pod));
  return progress;
}
