import { BRIDGE, type NetworkPlan, NODE_LINK, POD_LINK } from "./plan.js";

/**
 * The nftables rules of the pod network (see plan.ts), one table per place, each replaced whole in
 * one transaction (`add`, `delete`, then the table), so a restarted agent simply writes them again.
 */

/** Replaces table `family name` by `body` atomically. */
function replaceTable(family: string, name: string, body: string): string {
  return `add table ${family} ${name}\ndelete table ${family} ${name}\ntable ${family} ${name} {\n${body}}\n`;
}

function portSet(ports: readonly number[]): string {
  return ports.length ? `\t\telements = { ${[...new Set(ports)].sort((a, b) => a - b).join(", ")} }\n` : "";
}

export const NODE_TABLE = "tenantry-node";
/**
 * Every local cluster's pods at their mapped addresses (198.18.<k>.<n>): the underlay between the
 * clusters on this machine, as the internet is between real ones. Only UDP crosses it (what
 * tunnels between clusters' gateways need), from a node's pods to another node's pods.
 */
export const UNDERLAY_CIDR = "198.18.0.0/16";
export const POD_TABLE = "tenantry-pod";
export const HOST_PORTS_SET = "host_ports";

/**
 * The machine's side: what pods send to the link's address on a listed port goes to the machine's
 * 127.0.0.1 (the services the harness runs there); nothing else from the link reaches the machine.
 */
export function hostRules(plan: NetworkPlan, ports: readonly number[]): string {
  const link = plan.hostLink;
  return replaceTable(
    "ip",
    plan.hostTable,
    `\tset ${HOST_PORTS_SET} {\n\t\ttype inet_service\n${portSet(ports)}\t}
\tchain prerouting {
\t\ttype nat hook prerouting priority dstnat; policy accept;
\t\tiifname "${link}" ip daddr ${plan.hostAddress} meta l4proto { tcp, udp } th dport @${HOST_PORTS_SET} dnat to 127.0.0.1
\t}
\tchain forward {
\t\ttype filter hook forward priority filter; policy accept;
\t\tiifname "${link}" ip saddr ${plan.mappedCidr} ip daddr ${UNDERLAY_CIDR} meta l4proto udp oifname "tnr*" accept
\t\tiifname "${link}" drop
\t}
\tchain input {
\t\ttype filter hook input priority filter; policy accept;
\t\tiifname "${link}" ct state established,related accept
\t\tiifname "${link}" ct status dnat accept
\t\tiifname "${link}" drop
\t}
`,
  );
}

/** Adds ports to the machine's (or the node's) set of listed ports. */
export function addPortsRule(family: string, table: string, ports: readonly number[]): string {
  return ports.length ? `add element ${family} ${table} ${HOST_PORTS_SET} { ${ports.join(", ")} }\n` : "";
}

/**
 * The mark kube-router's NetworkPolicy chains give traffic a policy allows (its `KUBE-NWPLCY-*`
 * chains set it; a pod's chain rejects what lacks it).
 */
export const POLICY_ALLOWED_MARK = 0x10000;

/**
 * The node namespace: the mapped prefix onto the podCIDR, its own processes (kube-proxy) reaching
 * the machine's listed 127.0.0.1 services, and a forward policy that lets packets go only to pods
 * and, from pods, to the machine's link address: nothing made elsewhere is ever reached. The
 * machine is the node's host: pods' packets to its services leave the node from the link's
 * address (the machine's route to an identical podCIDR of another cluster would otherwise carry
 * the answers away), and its traffic to pods (probes, the runtimes proxy) is exempt from
 * NetworkPolicy as a node's own traffic is, marked as kube-router marks allowed traffic (kube-router
 * itself exempts only addresses local to its namespace, and the machine's is across the link).
 */
export function nodeRules(plan: NetworkPlan, ports: readonly number[]): string {
  return replaceTable(
    "ip",
    NODE_TABLE,
    `\tset ${HOST_PORTS_SET} {\n\t\ttype inet_service\n${portSet(ports)}\t}
\tchain prerouting {
\t\ttype nat hook prerouting priority dstnat; policy accept;
\t\tip daddr ${plan.mappedCidr} dnat ip prefix to ${plan.podCidr}
\t}
\tchain output {
\t\ttype nat hook output priority -100; policy accept;
\t\tip daddr 127.0.0.1 meta l4proto { tcp, udp } th dport @${HOST_PORTS_SET} dnat to ${plan.hostAddress}
\t}
\tchain postrouting {
\t\ttype nat hook postrouting priority srcnat; policy accept;
\t\toifname "${NODE_LINK}" ip saddr 127.0.0.0/8 masquerade
\t\toifname "${NODE_LINK}" ip saddr ${plan.podCidr} ip daddr ${plan.hostAddress} masquerade
\t\toifname "${NODE_LINK}" ip saddr ${plan.podCidr} ip daddr ${UNDERLAY_CIDR} snat ip prefix to ${plan.mappedCidr}
\t}
\tchain node-traffic {
\t\ttype filter hook prerouting priority mangle; policy accept;
\t\tiifname "${NODE_LINK}" ip saddr ${plan.hostAddress} meta mark set meta mark | ${POLICY_ALLOWED_MARK}
\t}
\tchain forward {
\t\ttype filter hook forward priority filter; policy drop;
\t\tct state established,related accept
\t\tip daddr ${plan.podCidr} accept
\t\tiifname "${BRIDGE}" ip saddr ${plan.podCidr} ip daddr ${plan.hostAddress} accept
\t\tiifname "${BRIDGE}" ip saddr ${plan.podCidr} ip daddr ${UNDERLAY_CIDR} meta l4proto udp accept
\t\tiifname "${BRIDGE}" oifname "${BRIDGE}" accept
\t}
`,
  );
}

/** A pod's namespace: 127.0.0.1 on a listed port is the machine's, as it was before pods had namespaces. */
export function podRules(plan: NetworkPlan, ports: readonly number[]): string {
  const forward = ports.length
    ? `\t\tip daddr 127.0.0.1 meta l4proto { tcp, udp } th dport { ${[...new Set(ports)].join(", ")} } dnat to ${plan.hostAddress}\n`
    : "";
  return replaceTable(
    "ip",
    POD_TABLE,
    `\tchain output {
\t\ttype nat hook output priority -100; policy accept;
${forward}\t}
\tchain postrouting {
\t\ttype nat hook postrouting priority srcnat; policy accept;
\t\toifname "${POD_LINK}" ip saddr 127.0.0.0/8 masquerade
\t}
`,
  );
}
