/**
 * tenantry as a process of its own, for benchmarks (its memory is then its own, measured like
 * Capsule's manager) and fault tests (it can be killed with SIGKILL and started again).
 * Arguments: <cluster> <kubeconfig> <log file> --webhook-client-ca FILE [--identity NAME] [--webhook-port PORT] [--standby]
 * [--without gateway,runtimes-admin,runtimes-proxy,logical-clouds] [--metrics-port PORT] [--components LIST].
 * Prints "ready" once it leads and all its controllers have started (not merely once it leads); SIGTERM stops it.
 * With --components (capability names, as `tenantry run` takes them) it runs only those, each
 * capability's controllers under its own Lease, and prints "ready" once its informers have synced:
 * another replica may lead what it runs. With --standby it loads, prints
 * "loaded" and waits for a line on stdin before it touches the cluster: a restart then costs
 * tenantry's own start, not loading its code. With --metrics-port it serves /metrics (and /healthz,
 * /readyz) on 127.0.0.1, as `tenantry run` does.
 */
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { pino } from "pino";
import { startHealthServer } from "../../src/app/health.js";
import { startTenantry } from "../../src/app/tenantry.js";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    identity: { type: "string" },
    "webhook-port": { type: "string" },
    "webhook-client-ca": { type: "string" },
    standby: { type: "boolean", default: false },
    without: { type: "string", default: "" },
    "metrics-port": { type: "string" },
    components: { type: "string" },
  },
});
const [cluster, kubeconfig, logFile] = positionals;
if (!cluster || !kubeconfig || !logFile || !values["webhook-client-ca"]) {
  process.stderr.write(
    "usage: tenantry-child.ts <cluster> <kubeconfig> <log file> --webhook-client-ca FILE [--identity NAME] [--webhook-port PORT] [--standby] [--without gateway,runtimes-admin,runtimes-proxy,logical-clouds] [--metrics-port PORT] [--components LIST]\n",
  );
  process.exit(2);
}
const without = values.without.split(",").filter(Boolean);
if (values.standby) {
  process.stdout.write("loaded\n");
  await once(process.stdin, "data");
}
// Written synchronously: a process killed with SIGKILL keeps its last words.
const logger = pino(
  { level: process.env.TENANTRY_LOG_LEVEL ?? "warn" },
  pino.destination({ dest: logFile, sync: true, append: true }),
);
const tenantry = await startTenantry({
  cluster,
  kubeconfig,
  logger,
  webhookClientCa: readFileSync(values["webhook-client-ca"], "utf8"),
  ...(values.identity ? { identity: values.identity } : {}),
  ...(values["webhook-port"] ? { webhookPort: Number(values["webhook-port"]) } : {}),
  ...(without.includes("gateway") ? { gateway: false as const } : {}),
  ...(without.includes("runtimes-admin") ? { runtimesAdmin: false as const } : {}),
  ...(without.includes("runtimes-proxy") ? { runtimesProxy: false as const } : {}),
  ...(without.includes("logical-clouds") ? { logicalClouds: false as const } : {}),
  ...(values.components ? { capabilities: values.components.split(",") } : {}),
});
if (values["metrics-port"]) {
  await startHealthServer({
    host: "127.0.0.1",
    port: Number(values["metrics-port"]),
    ready: () => tenantry.ready(),
    registry: tenantry.metrics,
  });
}
while (!(values.components ? tenantry.ready() : tenantry.controllersRunning())) await sleep(100);
process.stdout.write("ready\n");
process.once("SIGTERM", () => {
  tenantry.stop().finally(() => process.exit(0));
});
