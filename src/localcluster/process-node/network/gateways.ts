import type { V1Pod } from "@kubernetes/client-node";
import { Cidr } from "./cidr.js";
import { inNamespace, quietly } from "./commands.js";
import { BRIDGE, type NetworkPlan, SERVICE_CIDR } from "./plan.js";

/**
 * What a network gateway pod (one granted NET_ADMIN, e.g. tenantry's multi-cluster gateway) asks
 * of the node, as a cluster's network fabric does for it on a real node: the node routes the
 * prefixes the pod's annotation lists through the pod, so every pod of the node reaches them.
 */
export const POD_ROUTES_ANNOTATION = "network.tenantry.dev/routes";

/** The network sysctls a pod may set in its own namespace (`spec.securityContext.sysctls`). */
const POD_SYSCTLS = /^net\.ipv4\.(ip_forward|conf\.(all|default|eth0|lo)\.(forwarding|rp_filter))$/;

function grantsNetAdmin(pod: V1Pod): boolean {
  return (pod.spec?.containers ?? []).some((c) =>
    (c.securityContext?.capabilities?.add ?? []).some(
      (cap) => cap.toUpperCase().replace(/^CAP_/, "") === "NET_ADMIN",
    ),
  );
}

/**
 * The prefixes pod `pod` asks the node to route through it: only a pod granted NET_ADMIN may ask,
 * and only for prefixes in 10.0.0.0/8 outside the node's podCIDR and the Service range (so no pod
 * takes another's traffic or the cluster's own). Refusals name the annotation.
 */
export function requestedRoutes(plan: NetworkPlan, pod: V1Pod): string[] {
  const text = pod.metadata?.annotations?.[POD_ROUTES_ANNOTATION];
  if (!text) return [];
  if (!grantsNetAdmin(pod))
    throw new Error(
      `annotation ${POD_ROUTES_ANNOTATION}: only a pod granted NET_ADMIN may route prefixes through itself`,
    );
  const reserved = [plan.podCidr, SERVICE_CIDR].map((c) => Cidr.parse(c));
  const allowed = Cidr.parse("10.0.0.0/8");
  return text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      let cidr: Cidr;
      try {
        cidr = Cidr.parse(entry);
      } catch {
        throw new Error(`annotation ${POD_ROUTES_ANNOTATION}: "${entry}" is not an IPv4 prefix`);
      }
      const inside = allowed.overlaps(cidr) && cidr.bits >= allowed.bits;
      if (!inside || reserved.some((r) => r.overlaps(cidr)))
        throw new Error(
          `annotation ${POD_ROUTES_ANNOTATION}: ${entry} must lie in 10.0.0.0/8 outside the podCIDR ${plan.podCidr} and the Service range ${SERVICE_CIDR}`,
        );
      return cidr.toString();
    });
}

/** The pod's network sysctls, checked (`name=value` pairs to write in its namespace). */
export function podSysctls(pod: V1Pod): [string, string][] {
  return (pod.spec?.securityContext?.sysctls ?? []).map((sysctl, i) => {
    if (!POD_SYSCTLS.test(sysctl.name) || !/^[01]$/.test(sysctl.value))
      throw new Error(
        `spec.securityContext.sysctls[${i}]: ${sysctl.name}=${sysctl.value} is not allowed on the process node (only 0 or 1 for net.ipv4.ip_forward and net.ipv4.conf.<all|default|eth0|lo>.<forwarding|rp_filter>)`,
      );
    return [sysctl.name, sysctl.value];
  });
}

export async function writePodSysctls(namespace: string, sysctls: [string, string][]): Promise<void> {
  if (!sysctls.length) return;
  const script = sysctls
    .map(([name, value]) => `echo ${value} > /proc/sys/${name.replace(/\./g, "/")}`)
    .join(" && ");
  await inNamespace(namespace, "sh", ["-c", script]);
}

interface Route {
  dst: string;
  gateway?: string;
}

/** Makes the node's routes through `podIP` exactly `prefixes` (none: removes them). */
export async function routeThroughPod(
  plan: NetworkPlan,
  podIP: string,
  prefixes: readonly string[],
): Promise<void> {
  const node = plan.nodeNamespace;
  const routes = JSON.parse(
    (await inNamespace(node, "ip", ["-j", "route", "show", "dev", BRIDGE])) || "[]",
  ) as Route[];
  for (const route of routes)
    if (route.gateway === podIP && !prefixes.includes(route.dst))
      await quietly(inNamespace(node, "ip", ["route", "del", route.dst, "via", podIP]));
  for (const prefix of prefixes)
    await inNamespace(node, "ip", ["route", "replace", prefix, "via", podIP, "dev", BRIDGE]);
}

/** Removes every route of the node through `podIP` (its pod is gone). */
export async function forgetPodRoutes(plan: NetworkPlan, podIP: string): Promise<void> {
  await quietly(routeThroughPod(plan, podIP, []));
}
