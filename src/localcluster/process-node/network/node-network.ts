import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { Cidr } from "./cidr.js";
import { inNamespace, networkNamespaces, quietly, run } from "./commands.js";
import { BRIDGE, type NetworkPlan, NODE_LINK, namespacePrefix } from "./plan.js";
import { addPortsRule, HOST_PORTS_SET, hostRules, NODE_TABLE, nodeRules, UNDERLAY_CIDR } from "./rules.js";

/** A route of the machine, as `ip -j route show` gives it. */
interface Route {
  dst: string;
  dev?: string;
}

async function hostRoutes(): Promise<Route[]> {
  return JSON.parse((await run("ip", ["-j", "route", "show"])) || "[]") as Route[];
}

/**
 * Whether a route of the machine that is not this harness's (`tnr<k>h` links) covers any address
 * of the plan: such a network is not claimed, so no real network of the machine is shadowed.
 */
export async function plansTakenByRoutes(): Promise<(plan: NetworkPlan) => boolean> {
  const foreign = (await hostRoutes())
    .filter((r) => r.dst !== "default" && !/^tnr\d+h$/.test(r.dev ?? ""))
    .flatMap((r) => {
      try {
        return [Cidr.parse(r.dst.includes("/") ? r.dst : `${r.dst}/32`)];
      } catch {
        return [];
      }
    });
  return (plan) =>
    [plan.podCidr, plan.mappedCidr, `${plan.hostAddress.replace(/\.1$/, ".0")}/30`].some((text) =>
      foreign.some((route) => route.overlaps(Cidr.parse(text))),
    );
}

async function writeSysctl(namespace: string, settings: Record<string, string>): Promise<void> {
  const script = Object.entries(settings)
    .map(([key, value]) => `echo ${value} > /proc/sys/${key.replace(/\./g, "/")}`)
    .join(" && ");
  await inNamespace(namespace, "sh", ["-c", script]);
}

/**
 * Makes (or completes, after a restart) the node's network: its namespace with the bridge, the link
 * to the machine with its routes, and the rules of both sides. Answers whether the machine routes
 * the podCIDR itself (false when another cluster's identical podCIDR got the route first).
 */
export async function ensureNodeNetwork(
  plan: NetworkPlan,
  ports: readonly number[],
): Promise<{ directRoute: boolean }> {
  const node = plan.nodeNamespace;
  if (!(await networkNamespaces()).includes(node)) await run("ip", ["netns", "add", node]);
  if (!existsSync(`/sys/class/net/${plan.hostLink}`))
    await run("ip", ["link", "add", plan.hostLink, "type", "veth", "peer", "name", NODE_LINK, "netns", node]);
  await run("ip", ["addr", "replace", `${plan.hostAddress}/30`, "dev", plan.hostLink]);
  await run("ip", ["link", "set", plan.hostLink, "up"]);
  // The machine's end takes the pods' traffic for its 127.0.0.1 services (listed ports only).
  await writeFile(`/proc/sys/net/ipv4/conf/${plan.hostLink}/route_localnet`, "1\n");
  // The underlay between clusters' pods (UDP only, rules.ts): forwarded from this link alone.
  await writeFile(`/proc/sys/net/ipv4/conf/${plan.hostLink}/forwarding`, "1\n");
  const bridgeMissing = !(await inNamespace(node, "ip", ["-o", "link", "show"])).includes(` ${BRIDGE}:`);
  await inNamespace(
    node,
    "ip",
    ["-batch", "-"],
    [
      `addr replace ${plan.nodeAddress}/30 dev ${NODE_LINK}`,
      `link set ${NODE_LINK} up`,
      "link set lo up",
      ...(bridgeMissing ? [`link add ${BRIDGE} type bridge`] : []),
      `addr replace ${plan.gateway}/24 dev ${BRIDGE}`,
      `link set ${BRIDGE} up`,
      `route replace ${UNDERLAY_CIDR} via ${plan.hostAddress} dev ${NODE_LINK}`,
      "",
    ].join("\n"),
  );
  await writeSysctl(node, {
    "net.ipv4.ip_forward": "1",
    "net.ipv4.conf.all.route_localnet": "1",
    "net.bridge.bridge-nf-call-iptables": "1",
  });
  await run("ip", ["route", "replace", plan.mappedCidr, "via", plan.nodeAddress, "dev", plan.hostLink]);
  const directRoute = await claimDirectRoute(plan);
  await run("nft", ["-f", "-"], hostRules(plan, ports));
  await inNamespace(node, "nft", ["-f", "-"], nodeRules(plan, ports));
  return { directRoute };
}

/** The podCIDR is routed to this node unless a route to it leads elsewhere already. */
async function claimDirectRoute(plan: NetworkPlan): Promise<boolean> {
  const existing = (await hostRoutes()).find((r) => r.dst === plan.podCidr);
  if (existing && existing.dev !== plan.hostLink) return false;
  await run("ip", ["route", "replace", plan.podCidr, "via", plan.nodeAddress, "dev", plan.hostLink]);
  return true;
}

/** Lists more of the machine's 127.0.0.1 ports for pods (both sides' sets). */
export async function listHostPorts(plan: NetworkPlan, ports: readonly number[]): Promise<void> {
  if (!ports.length) return;
  await run("nft", ["-f", "-"], addPortsRule("ip", plan.hostTable, ports));
  await inNamespace(plan.nodeNamespace, "nft", ["-f", "-"], addPortsRule("ip", NODE_TABLE, ports));
}

/** The ports listed now in the machine's set (after a restart of the agent). */
export async function listedHostPorts(plan: NetworkPlan): Promise<number[]> {
  try {
    const out = await run("nft", ["-j", "list", "set", "ip", plan.hostTable, HOST_PORTS_SET]);
    const parsed = JSON.parse(out) as { nftables: { set?: { elem?: number[] } }[] };
    return parsed.nftables.flatMap((entry) => entry.set?.elem ?? []);
  } catch {
    return [];
  }
}

/**
 * Removes everything of network `index` from the machine: every namespace named for it (pods and
 * node; the link goes with the node's), the machine's end of the link and its table. Safe to run
 * after a crash and when nothing is left.
 */
export async function removeNetwork(index: number, plan?: NetworkPlan): Promise<void> {
  const prefix = namespacePrefix(index);
  for (const namespace of await networkNamespaces())
    if (namespace.startsWith(prefix)) await quietly(run("ip", ["netns", "del", namespace]));
  await quietly(run("ip", ["link", "del", plan?.hostLink ?? `tnr${index}h`]));
  await quietly(run("nft", ["delete", "table", "ip", plan?.hostTable ?? `tenantry-net-${index}`]));
}
