/**
 * A storage system of its own (its own provisioner name, so the shared tenantry leaves its pools
 * alone) in a child process: for tests that kill it mid-way, or run it without root or without
 * fscrypt. Arguments: kubeconfig, provisioner name. Prints "started" once it runs.
 */
import { pino } from "pino";
import { Registry } from "prom-client";
import { loadClusterClient } from "../../src/kube/index.js";
import { StorageSystem } from "../../src/storage/index.js";

const [kubeconfig, provisioner] = process.argv.slice(2);
if (!kubeconfig || !provisioner) throw new Error("usage: storage-system.ts <kubeconfig> <provisioner>");
const system = new StorageSystem({
  client: loadClusterClient("home", kubeconfig),
  namespace: "tenantry-system",
  registry: new Registry(),
  logger: pino({ level: process.env.LOG_LEVEL ?? "info" }, pino.destination(2)),
  provisioner,
  agent: { installTools: false },
});
await system.start();
process.stdout.write("started\n");
process.on("SIGTERM", () => {
  void system.stop().then(() => process.exit(0));
});
