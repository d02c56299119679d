import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import type { CoreV1Api, V1Container, V1Pod, V1PodSpec } from "@kubernetes/client-node";
import WebSocket from "ws";
import { LOCAL_IMAGES, PROCESS_NODE_PLACEMENT } from "../../src/localcluster/index.js";

/** A pod for the process node of a local cluster (its node selector and toleration set). */
export function processNodePod(
  name: string,
  containers: V1Container[],
  spec: Partial<NonNullable<V1Pod["spec"]>> = {},
  labels: Record<string, string> = {},
): V1Pod {
  return {
    metadata: { name, labels },
    spec: {
      ...PROCESS_NODE_PLACEMENT,
      terminationGracePeriodSeconds: 5,
      ...spec,
      containers,
    },
  };
}

/** The pid of a container's process on this machine, from its containerID (`process://<pid>`). */
export function containerPid(pod: V1Pod, container?: string): number | undefined {
  const statuses = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])];
  const status = container ? statuses.find((s) => s.name === container) : statuses[0];
  const match = /^process:\/\/(\d+)$/.exec(status?.containerID ?? "");
  return match ? Number(match[1]) : undefined;
}

/** Alive and not a zombie (an orphan's zombie waits for whoever adopted it to reap it). */
export function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(")") + 2));
  } catch {
    return false;
  }
}

export function podReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
}

/**
 * Opens a WebSocket, sends each message once the server has spoken first (or at once when
 * `greeting` is false), and resolves with everything received, in order, once `done` says so.
 */
export function webSocketExchange(
  url: string,
  messages: string[],
  options: {
    done: (received: string[]) => boolean;
    greeting?: boolean;
    headers?: Record<string, string>;
    timeoutMs?: number;
  },
): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers: options.headers ?? {} });
    const received: string[] = [];
    const timer = setTimeout(() => {
      socket.terminate();
      reject(new Error(`WebSocket ${url}: got ${JSON.stringify(received)} before the timeout`));
    }, options.timeoutMs ?? 10_000);
    const sendAll = () => {
      for (const message of messages) socket.send(message);
    };
    socket.on("open", () => {
      if (options.greeting === false) sendAll();
    });
    socket.on("message", (data) => {
      received.push(data.toString());
      if (received.length === 1 && options.greeting !== false) sendAll();
      if (options.done(received)) {
        clearTimeout(timer);
        socket.close();
        resolve(received);
      }
    });
    socket.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/**
 * Runs `script` with sh in a pod of the process node (busybox: this machine's shell and tools,
 * curl among them) until it ends; resolves with its log and phase. The pod is deleted afterwards.
 */
export async function runInPod(
  api: CoreV1Api,
  namespace: string,
  name: string,
  script: string,
  options: { labels?: Record<string, string>; timeoutMs?: number; spec?: Partial<V1PodSpec> } = {},
): Promise<{ log: string; phase: string }> {
  await api.createNamespacedPod({
    namespace,
    body: processNodePod(
      name,
      [{ name: "sh", image: LOCAL_IMAGES.busybox, command: ["sh", "-c", script] }],
      { restartPolicy: "Never", terminationGracePeriodSeconds: 1, ...options.spec },
      options.labels ?? {},
    ),
  });
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  for (;;) {
    const pod = await api.readNamespacedPod({ namespace, name });
    const phase = pod.status?.phase ?? "";
    if (phase === "Succeeded" || phase === "Failed") {
      const log = await api.readNamespacedPodLog({ namespace, name });
      await api.deleteNamespacedPod({ namespace, name }).catch(() => {});
      return { log, phase };
    }
    if (Date.now() > deadline) throw new Error(`pod ${namespace}/${name} still ${phase}`);
    await sleep(300);
  }
}
