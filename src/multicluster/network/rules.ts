import { parseAddress, parsePrefix } from "./addresses.js";
import { type GatewayConfig, TUNNEL_INTERFACE } from "./config.js";

/** The gateway's nftables table, in its own pod's network namespace. */
export const GATEWAY_TABLE = "tenantry-gateway";

/**
 * The gateway's rules, replacing its table whole in one transaction:
 *
 * - remapping (NETMAP both ways): what arrives from a peer for the range the peer sees this
 *   cluster's pods in is translated onto the podCIDR, and this cluster's pods leave for a peer
 *   translated into that same range, so the peer routes them whatever the two podCIDRs are;
 * - the filter: a packet crosses the tunnel only between a pod of an offloaded namespace here and a
 *   pod of that namespace's counterpart in a peer (matched by the namespace's number: the local
 *   address names it, the remote address must be listed under it); answers of allowed flows pass;
 *   nothing else crosses, and nothing from the tunnel reaches the gateway itself.
 */
export function gatewayRules(config: GatewayConfig): string {
  parsePrefix(config.podCidr, "podCidr");
  const wg = TUNNEL_INTERFACE;
  const local = new Map<string, number>();
  const remote: string[] = [];
  for (const [i, namespace] of config.namespaces.entries()) {
    if (!Number.isInteger(namespace.id) || namespace.id < 1 || namespace.id > 2 ** 31)
      throw new Error(`namespaces[${i}].id: ${namespace.id} is not from 1 to 2^31`);
    for (const address of namespace.local) {
      parseAddress(address, `namespaces[${i}].local`);
      local.set(address, namespace.id);
    }
    for (const address of namespace.remote) {
      parseAddress(address, `namespaces[${i}].remote`);
      remote.push(`${namespace.id} . ${address}`);
    }
  }
  const nat = config.peers.map((peer, i) => {
    parsePrefix(peer.remappedCidr, `peers[${i}].remappedCidr`);
    parsePrefix(peer.seenAs, `peers[${i}].seenAs`);
    return {
      in: `\t\tiifname "${wg}" ip saddr ${peer.remappedCidr} ip daddr ${peer.seenAs} dnat ip prefix to ${config.podCidr}\n`,
      out: `\t\toifname "${wg}" ip saddr ${config.podCidr} ip daddr ${peer.remappedCidr} snat ip prefix to ${peer.seenAs}\n`,
    };
  });
  const elements = (items: string[]) => (items.length ? `\t\telements = { ${items.join(", ")} }\n` : "");
  const localItems = [...local].map(([address, id]) => `${address} : ${id}`);
  return `add table ip ${GATEWAY_TABLE}
delete table ip ${GATEWAY_TABLE}
table ip ${GATEWAY_TABLE} {
\tmap local_namespace {
\t\ttype ipv4_addr : mark
${elements(localItems)}\t}
\tset remote_pods {
\t\ttype mark . ipv4_addr
${elements(remote)}\t}
\tchain prerouting {
\t\ttype nat hook prerouting priority dstnat; policy accept;
${nat.map((n) => n.in).join("")}\t}
\tchain postrouting {
\t\ttype nat hook postrouting priority srcnat; policy accept;
${nat.map((n) => n.out).join("")}\t}
\tchain forward {
\t\ttype filter hook forward priority filter; policy accept;
\t\tct state established,related accept
\t\toifname "${wg}" meta mark set ip saddr map @local_namespace meta mark . ip daddr @remote_pods accept
\t\tiifname "${wg}" meta mark set ip daddr map @local_namespace meta mark . ip saddr @remote_pods accept
\t\toifname "${wg}" counter drop
\t\tiifname "${wg}" counter drop
\t}
\tchain input {
\t\ttype filter hook input priority filter; policy accept;
\t\tiifname "${wg}" ct state established,related accept
\t\tiifname "${wg}" drop
\t}
}
`;
}
