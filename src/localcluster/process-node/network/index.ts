import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { forgetPodRoutes, routeThroughPod, writePodSysctls } from "./gateways.js";
import { ensureNodeNetwork, listedHostPorts, listHostPorts, removeNetwork } from "./node-network.js";
import { mappedAddress, type NetworkPlan, podNamespace, podNetworkId } from "./plan.js";
import { attachPod, detachPod } from "./pods.js";

export { PodAddresses } from "./addresses.js";
export { claimNetwork, readRecordedNetwork, releaseNetwork } from "./claims.js";
export { run } from "./commands.js";
export { POD_ROUTES_ANNOTATION, podSysctls, requestedRoutes } from "./gateways.js";
export { plansTakenByRoutes, removeNetwork } from "./node-network.js";
/** A pod address of this node as every local cluster's pods reach it over the underlay (rules.ts). */
export function podAddressOnUnderlay(plan: NetworkPlan, podIP: string): string | undefined {
  return mappedAddress(plan, podIP);
}

export {
  CLUSTER_DOMAIN,
  DNS_SERVICE_IP,
  type NetworkPlan,
  networkPlan,
  SERVICE_CIDR,
} from "./plan.js";

/** Extra 127.0.0.1 ports of the machine pods may reach (written by the harness, e.g. the DNS server's). */
export function extraHostPortsFile(clusterDir: string): string {
  return join(clusterDir, "process-node", "host-ports.json");
}

/**
 * Lets the cluster's pods reach more of the machine's 127.0.0.1 ports, as pods of a real cluster
 * reach a Service in front of a component running beside it (e.g. tenantry's runtimes Admin API:
 * the backup agents' broker, runtimes' stop and activity reports). Pods created from now on get them.
 */
export async function letPodsReachHostPorts(clusterDir: string, ports: number[]): Promise<void> {
  const file = extraHostPortsFile(clusterDir);
  const listed = existsSync(file) ? (JSON.parse(await readFile(file, "utf8")) as number[]) : [];
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, JSON.stringify([...new Set([...listed, ...ports])]));
}

/**
 * The machine's 127.0.0.1 services a pod may reach: the cluster's API server, the harness's object
 * store when it runs, and what the harness listed for the cluster (its DNS server).
 */
export async function hostPortsOf(clusterDir: string, apiserverPort: number): Promise<number[]> {
  const ports = [apiserverPort];
  const readJson = async <T>(file: string): Promise<T | undefined> =>
    existsSync(file) ? (JSON.parse(await readFile(file, "utf8")) as T) : undefined;
  const store = await readJson<{ endpoint?: string }>(
    join(dirname(clusterDir), "object-store", "object-store.json"),
  ).catch(() => undefined);
  if (store?.endpoint) ports.push(Number(new URL(store.endpoint).port));
  const extra = await readJson<number[]>(extraHostPortsFile(clusterDir)).catch(() => undefined);
  ports.push(...(extra ?? []));
  return [...new Set(ports.filter((p) => Number.isInteger(p) && p > 0 && p < 65536))];
}

/**
 * The process node's side of its pod network (see plan.ts): made or completed when the agent
 * starts, a namespace per pod, and everything removed when the node stops.
 */
export class NodeNetwork {
  private listed = new Set<number>();

  private constructor(
    readonly plan: NetworkPlan,
    /** Whether the machine routes the podCIDR here (else only the mapped prefix reaches the pods). */
    readonly directRoute: boolean,
    private readonly ports: () => Promise<number[]>,
  ) {}

  static async start(plan: NetworkPlan, ports: () => Promise<number[]>): Promise<NodeNetwork> {
    const current = await ports();
    const listed = await listedHostPorts(plan);
    const { directRoute } = await ensureNodeNetwork(plan, [...new Set([...listed, ...current])]);
    const network = new NodeNetwork(plan, directRoute, ports);
    for (const port of [...listed, ...current]) network.listed.add(port);
    return network;
  }

  /** Gives the pod its namespace with `ip` and its network sysctls; answers the namespace's name. */
  async attach(uid: string, ip: string, sysctls: [string, string][] = []): Promise<string> {
    const ports = await this.ports();
    const fresh = ports.filter((p) => !this.listed.has(p));
    if (fresh.length) {
      await listHostPorts(this.plan, fresh);
      for (const port of fresh) this.listed.add(port);
    }
    const namespace = await attachPod(this.plan, uid, ip, ports);
    await writePodSysctls(namespace, sysctls);
    return namespace;
  }

  /** Removes the pod's namespace and whatever the node routed through it. */
  async detach(uid: string, ip?: string): Promise<void> {
    if (ip) await forgetPodRoutes(this.plan, ip);
    return detachPod(this.plan, uid);
  }

  /** Routes `prefixes` of the node through the pod at `ip` (a gateway pod's annotation asks). */
  routeThrough(ip: string, prefixes: readonly string[]): Promise<void> {
    return routeThroughPod(this.plan, ip, prefixes);
  }

  /** The pod's namespace, if it exists (a pod adopted after a restart of the agent). */
  existing(uid: string): string | undefined {
    const namespace = podNamespace(this.plan, podNetworkId(uid));
    return existsSync(`/run/netns/${namespace}`) ? namespace : undefined;
  }

  /** Where the agent (probes) reaches a pod's address. */
  reach(podIP: string): string {
    return this.directRoute ? podIP : (mappedAddress(this.plan, podIP) ?? podIP);
  }

  contains(ip: string): boolean {
    return mappedAddress(this.plan, ip) !== undefined;
  }

  /** Removes the whole network (the node is stopping, its pods are stopped). */
  stop(): Promise<void> {
    return removeNetwork(this.plan.index, this.plan);
  }
}
