import type { Command } from "commander";
import { ClusterHarness, defaultClusters } from "../localcluster/index.js";

/**
 * `tenantry up` (what `npm start` runs): the embedded default. Starts the local clusters, prints
 * what to try, and stops everything on Ctrl-C.
 */
export function registerUpCommand(program: Command): void {
  program
    .command("up")
    .description("run tenantry on the embedded default: local clusters home, edge-1 and edge-2")
    .option("--dir <path>", "folder holding the clusters")
    .option("--keep", "leave the clusters running on exit")
    .action(async (opts: { dir?: string; keep?: boolean }) => {
      const harness = new ClusterHarness(opts.dir ? { dir: opts.dir } : {});
      const states = await harness.up([...defaultClusters]);
      const home = states.find((s) => s.name === "home");
      process.stdout.write(
        [
          "",
          "tenantry is up on the embedded default:",
          ...states.map((s) => `  ${s.name.padEnd(8)} ${s.server}  kubeconfig: ${s.kubeconfig}`),
          "",
          "Try:",
          `  export KUBECONFIG=${home?.kubeconfig}`,
          "  kubectl get nodes -L topology.kubernetes.io/region,topology.kubernetes.io/zone,tenantry.dev/provider",
          "  kubectl create deployment web --image=nginx --replicas=3 && kubectl get pods -o wide",
          "  npx tenantry dev cluster status",
          "",
          opts.keep
            ? "Clusters keep running; stop them with: npx tenantry dev cluster down"
            : "Press Ctrl-C to stop.",
          "",
        ].join("\n"),
      );
      if (opts.keep) return;
      // Watching health also keeps the process alive: signal handlers alone do not.
      let reported = "";
      const watch = setInterval(async () => {
        const degraded = (await harness.status(states.map((s) => s.name))).filter(
          (s) => s.state !== "running",
        );
        const summary = degraded.map((s) => `${s.name} is ${s.state} (logs: ${s.dir}/logs)`).join("; ");
        if (summary && summary !== reported) process.stderr.write(`warning: ${summary}\n`);
        reported = summary;
      }, 10_000);
      // A terminal's Ctrl-C reaches npm, tsx and node at once, and tsx relays it again: handle every
      // signal (a second one must not kill the process half-way through stopping).
      await new Promise<void>((resolve) => {
        for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => resolve());
      });
      clearInterval(watch);
      process.stdout.write("\nstopping clusters…\n");
      await harness.down(states.map((s) => s.name));
      process.stdout.write("stopped.\n");
    });
}
