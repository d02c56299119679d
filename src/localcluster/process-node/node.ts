import { arch, release } from "node:os";
import { PatchStrategy, type V1Node } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { type ClusterClient, describeError, isNotFound } from "../../kube/index.js";
import { ZONE_LABEL } from "../spec.js";
import { PROCESS_NODE_LABEL, PROCESS_NODE_TAINT } from "./constants.js";

/** Field manager of everything the process node's agent writes. */
export const PROCESS_NODE_MANAGER = "tenantry-process-node";

export interface ProcessNodeSpec {
  name: string;
  /** The cluster's labels (region, provider, …), as its simulated nodes carry them. */
  clusterLabels: Record<string, string>;
  podCidr: string;
  hostIP: string;
  capacity: Record<string, string>;
  kubeletVersion: string;
  /** Port of the kubelet API (container logs) served by the agent. */
  kubeletPort: number;
}

/** The Node object: not annotated for KWOK, labelled, tainted, with its own loopback pod network. */
export function processNodeObject(spec: ProcessNodeSpec): V1Node {
  const region = Object.entries(spec.clusterLabels).find(([k]) => k.endsWith("/region"))?.[1] ?? "local";
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: spec.name,
      labels: {
        ...spec.clusterLabels,
        [ZONE_LABEL]: `${region}-a`,
        "kubernetes.io/hostname": spec.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch() === "x64" ? "amd64" : arch(),
        "node-role.kubernetes.io/worker": "",
        [PROCESS_NODE_LABEL]: "true",
        type: "process",
      },
    },
    spec: { podCIDR: spec.podCidr, podCIDRs: [spec.podCidr], taints: [{ ...PROCESS_NODE_TAINT }] },
  };
}

function nodeStatus(spec: ProcessNodeSpec, readySince: string) {
  const heartbeat = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const condition = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: heartbeat,
    lastTransitionTime: readySince,
  });
  return {
    capacity: spec.capacity,
    allocatable: spec.capacity,
    conditions: [
      condition(
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
      ),
      condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
      condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
      condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ],
    // No Hostname address: kube-apiserver would try to resolve it to reach the kubelet API.
    addresses: [{ type: "InternalIP", address: spec.hostIP }],
    daemonEndpoints: { kubeletEndpoint: { Port: spec.kubeletPort } },
    nodeInfo: {
      machineID: "",
      systemUUID: "",
      bootID: "",
      kernelVersion: release(),
      osImage: "local processes (tenantry process node)",
      containerRuntimeVersion: `process://node-${process.version}`,
      kubeletVersion: spec.kubeletVersion,
      kubeProxyVersion: "",
      operatingSystem: "linux",
      architecture: arch() === "x64" ? "amd64" : arch(),
    },
  };
}

/**
 * Registers the node and keeps it Ready as a kubelet does: the Node's status (conditions with
 * heartbeats, capacity, addresses) every minute and its Lease in kube-node-lease every 10 s.
 */
export class NodeHeartbeat {
  private timers: NodeJS.Timeout[] = [];
  private readonly readySince = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  private uid?: string;

  constructor(
    private readonly client: ClusterClient,
    private readonly spec: ProcessNodeSpec,
    private readonly logger: Logger,
  ) {}

  /** Creates the node (again, when an older one has another pod network) and reports it Ready. */
  async register(): Promise<{ recreated: boolean }> {
    const desired = processNodeObject(this.spec);
    let recreated = false;
    try {
      const existing = await this.client.core.readNode({ name: this.spec.name });
      if (existing.spec?.podCIDR && existing.spec.podCIDR !== this.spec.podCidr) {
        // spec.podCIDR cannot change: the node is replaced, and its pods with it.
        this.logger.warn(
          { was: existing.spec.podCIDR, now: this.spec.podCidr },
          "pod network changed; replacing the node",
        );
        await this.client.core.deleteNode({ name: this.spec.name });
        recreated = true;
      }
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const applied = await this.client.objects.patchRaw(desired, PatchStrategy.ServerSideApply, {
      fieldManager: PROCESS_NODE_MANAGER,
      force: true,
    });
    this.uid = applied.metadata?.uid;
    await this.reportStatus();
    await this.renewLease();
    return { recreated };
  }

  start(): void {
    const every = (ms: number, beat: () => Promise<void>, what: string) => {
      const timer = setInterval(() => {
        beat().catch((err) => this.logger.warn({ error: describeError(err) }, `${what} failed`));
      }, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(10_000, () => this.renewLease(), "lease renewal");
    every(60_000, () => this.reportStatus(), "node status update");
  }

  stop(): void {
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
  }

  private async reportStatus(): Promise<void> {
    await this.client.objects.patchSubresource(
      {
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: this.spec.name },
        status: nodeStatus(this.spec, this.readySince),
      } as unknown as V1Node,
      "status",
      PatchStrategy.ServerSideApply,
      { fieldManager: PROCESS_NODE_MANAGER, force: true },
    );
  }

  private async renewLease(): Promise<void> {
    const renewTime = new Date().toISOString().replace("Z", "000Z");
    await this.client.objects.patchRaw(
      {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: {
          name: this.spec.name,
          namespace: "kube-node-lease",
          ...(this.uid
            ? { ownerReferences: [{ apiVersion: "v1", kind: "Node", name: this.spec.name, uid: this.uid }] }
            : {}),
        },
        spec: { holderIdentity: this.spec.name, leaseDurationSeconds: 40, renewTime },
      },
      PatchStrategy.ServerSideApply,
      { fieldManager: PROCESS_NODE_MANAGER, force: true },
    );
  }
}
