import type { Command } from "commander";
import { assertPortFree, ClusterHarness, defaultClusters, specFor } from "../localcluster/index.js";
import { type OutputFormat, printResult } from "./output.js";

function harnessFrom(command: Command): ClusterHarness {
  const { dir } = command.optsWithGlobals<{ dir?: string }>();
  return new ClusterHarness(dir ? { dir } : {});
}

/** `tenantry dev …`: local real clusters for trying tenantry out and for its tests. */
export function registerDevCommands(program: Command): void {
  const dev = program.command("dev").description("local Kubernetes clusters built from the real components");
  dev
    .command("build")
    .description(
      "build (once) and cache kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy, CoreDNS, kube-router, etcd and KWOK",
    )
    .action(async (_opts, command: Command) => {
      const binaries = await harnessFrom(command).components();
      printResult(binaries, "text", () =>
        Object.entries(binaries.versions)
          .map(([k, v]) => `${k} ${v}`)
          .join("\n"),
      );
    });

  const cluster = dev.command("cluster").description("start, stop, inspect and reset named local clusters");
  cluster.option("--dir <path>", "folder holding the clusters (default ~/.local/state/tenantry/clusters)");

  cluster
    .command("up")
    .description("start clusters (default: home, edge-1, edge-2) and wait until they are ready")
    .argument("[names...]", "cluster names")
    .option("--nodes <n>", "simulated nodes per cluster", (v) => Number(v))
    .option("--port <port>", "kube-apiserver port (one cluster only)", (v) => Number(v))
    .option("--apiserver-flag <flag...>", "extra kube-apiserver flag, e.g. --apiserver-flag=--v=2")
    .action(
      async (
        names: string[],
        opts: { nodes?: number; port?: number; apiserverFlag?: string[] },
        command: Command,
      ) => {
        const chosen = names.length ? names : defaultClusters.map((c) => c.name);
        if (opts.port !== undefined) {
          if (chosen.length !== 1)
            throw new (await import("../common/index.js")).UserError("--port needs exactly one cluster name");
          await assertPortFree(opts.port, `cluster "${chosen[0]}" kube-apiserver`);
        }
        const specs = chosen.map((name) => ({
          ...specFor(name),
          ...(opts.nodes !== undefined ? { nodes: opts.nodes } : {}),
          ...(opts.port !== undefined ? { apiserverPort: opts.port } : {}),
          ...(opts.apiserverFlag ? { extraApiserverFlags: opts.apiserverFlag } : {}),
        }));
        const states = await harnessFrom(command).up(specs);
        for (const s of states) process.stdout.write(`${s.name}\t${s.server}\t${s.kubeconfig}\n`);
      },
    );

  cluster
    .command("down")
    .description("stop clusters, keeping their data (default: all, and the object store)")
    .argument("[names...]", "cluster names")
    .action(async (names: string[], _opts, command: Command) => {
      const harness = harnessFrom(command);
      const stopped = await harness.down(names);
      if (names.length === 0) await harness.stopObjectStore();
      process.stdout.write(stopped.length ? `stopped ${stopped.join(", ")}\n` : "no clusters\n");
    });

  cluster
    .command("reset")
    .description("stop clusters and delete their data (default: all; the object store is stopped)")
    .argument("[names...]", "cluster names")
    .action(async (names: string[], _opts, command: Command) => {
      const harness = harnessFrom(command);
      const removed = await harness.reset(names);
      if (names.length === 0) await harness.stopObjectStore();
      process.stdout.write(removed.length ? `reset ${removed.join(", ")}\n` : "no clusters\n");
    });

  cluster
    .command("status")
    .description("show each cluster's state, API server and processes")
    .argument("[names...]", "cluster names")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (names: string[], opts: { output: OutputFormat }, command: Command) => {
      const statuses = await harnessFrom(command).status(names);
      printResult(statuses, opts.output, () =>
        statuses.length === 0
          ? "no clusters"
          : [
              "NAME\tSTATE\tSERVER\tKUBECONFIG",
              ...statuses.map((s) => `${s.name}\t${s.state}\t${s.server ?? "-"}\t${s.kubeconfig}`),
            ].join("\n"),
      );
    });
}
