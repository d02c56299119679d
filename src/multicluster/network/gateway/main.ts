/**
 * The network gateway's program (image `ghcr.io/tenantry/network-gateway`): wireguard-go on a TUN
 * device in the gateway pod's network namespace, configured by {@link GatewayAgent}. Its settings
 * come from the environment the gateway's Deployment gives it.
 */
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { GatewayAgent } from "./agent.js";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`the environment variable ${name} is required`);
  return value;
}

const log = (message: string, fields: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), message, ...fields })}\n`);

const config = new KubeConfig();
config.loadFromCluster();
const agent = new GatewayAgent({
  core: config.makeApiClient(CoreV1Api),
  namespace: required("POD_NAMESPACE"),
  podIP: required("POD_IP"),
  wireguardGo: required("WIREGUARD_GO"),
  log,
});
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    agent.stop();
    process.exit(0);
  });
}
agent.run().catch((err: unknown) => {
  log("gateway failed", { error: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
