import { inNamespace, quietly, run } from "./commands.js";
import { BRIDGE, type NetworkPlan, POD_LINK, podBridgePort, podNamespace, podNetworkId } from "./plan.js";
import { podRules } from "./rules.js";

/**
 * A pod's network namespace: `eth0` with its address on the node's bridge, the default route
 * through the bridge, and the machine's listed 127.0.0.1 services (rules.ts). Answers the
 * namespace's name, which the pod's containers are started in.
 */
export async function attachPod(
  plan: NetworkPlan,
  uid: string,
  ip: string,
  hostPorts: readonly number[],
): Promise<string> {
  const id = podNetworkId(uid);
  const namespace = podNamespace(plan, id);
  const port = podBridgePort(id);
  // A half-made namespace (a crash mid-way, an earlier attempt) is made again from scratch.
  await detachPod(plan, uid);
  await run("ip", ["netns", "add", namespace]);
  try {
    await run("ip", [
      "link",
      "add",
      port,
      "netns",
      plan.nodeNamespace,
      "type",
      "veth",
      "peer",
      "name",
      POD_LINK,
      "netns",
      namespace,
    ]);
    await inNamespace(
      plan.nodeNamespace,
      "ip",
      ["-batch", "-"],
      // Hairpin: a pod reaching itself through a Service's address comes back on its own port.
      `link set ${port} master ${BRIDGE}\nlink set ${port} type bridge_slave hairpin on\nlink set ${port} up\n`,
    );
    await inNamespace(
      namespace,
      "ip",
      ["-batch", "-"],
      `addr add ${ip}/24 dev ${POD_LINK}\nlink set ${POD_LINK} up\nlink set lo up\nroute add default via ${plan.gateway}\n`,
    );
    await inNamespace(
      namespace,
      "sh",
      ["-c", "echo 1 > /proc/sys/net/ipv4/conf/all/route_localnet && exec nft -f -"],
      podRules(plan, hostPorts),
    );
  } catch (err) {
    await detachPod(plan, uid);
    throw err;
  }
  return namespace;
}

/** Removes the pod's namespace (its veth pair goes with it) once its processes are gone. */
export async function detachPod(plan: NetworkPlan, uid: string): Promise<void> {
  await quietly(run("ip", ["netns", "del", podNamespace(plan, podNetworkId(uid))]));
}
