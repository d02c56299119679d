/**
 * tenantry as a process of its own, for the side-by-side run: its resident memory is then measured
 * exactly like Capsule's manager, without the benchmark's own watches in it.
 * Arguments: <cluster> <kubeconfig> <log file>. Prints "ready" once its controllers run; SIGTERM stops it.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { pino } from "pino";
import { startTenantry } from "../../src/app/tenantry.js";

const [cluster, kubeconfig, logFile] = process.argv.slice(2);
if (!cluster || !kubeconfig || !logFile) {
  process.stderr.write("usage: tenantry-process.ts <cluster> <kubeconfig> <log file>\n");
  process.exit(2);
}
const logger = pino({ level: "warn" }, pino.destination({ dest: logFile, sync: false }));
const tenantry = await startTenantry({ cluster, kubeconfig, logger });
while (!tenantry.isLeader()) await sleep(100);
process.stdout.write("ready\n");
process.once("SIGTERM", () => {
  tenantry.stop().finally(() => process.exit(0));
});
