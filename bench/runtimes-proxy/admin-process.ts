/**
 * The Admin API behind the runtimes proxy, both ways the proxy can reach it: in process (the
 * proxy hands the request to the Admin API's router) and forwarded over loopback to its port.
 * One process, one Admin API, two proxies; prints `{"admin", "inProcess", "forwarded"}`.
 */
import { parseArgs } from "node:util";
import { Registry } from "prom-client";
import { loadClusterClient } from "../../src/kube/index.js";
import { RuntimesProxy, StaticRouteSource, startRuntimesAdmin } from "../../src/runtimes/index.js";

const { values: args } = parseArgs({ options: { kubeconfig: { type: "string" } } });
if (!args.kubeconfig) throw new Error("--kubeconfig is required");
const admin = await startRuntimesAdmin({ client: loadClusterClient("bench", args.kubeconfig) });
const inProcess = new RuntimesProxy({
  source: new StaticRouteSource(),
  admin: { handle: admin.handle },
  registry: new Registry(),
});
const forwarded = new RuntimesProxy({
  source: new StaticRouteSource(),
  admin: { url: admin.url },
  registry: new Registry(),
});
process.stdout.write(
  `${JSON.stringify({ admin: admin.url, inProcess: await inProcess.start(), forwarded: await forwarded.start() })}\n`,
);
process.on("SIGTERM", () => {
  void Promise.all([inProcess.stop(), forwarded.stop(), admin.stop()]).finally(() => process.exit(0));
});
