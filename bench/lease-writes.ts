/**
 * `npm run bench:lease-writes`: how many Lease writes one `tenantry run` makes per minute — every
 * renewal of every Lease it holds is one write to kube-apiserver (and etcd). Starts a local cluster
 * in a temporary folder, runs `tenantry run --components <list>` from a checkout's sources (this
 * one, or --checkout, e.g. an older version unpacked with `git archive`), waits until its Leases
 * are held, then counts each Lease's writes in tenantry's namespace through a watch for --seconds.
 *
 * Run: npm run bench:lease-writes [-- --components LIST] [--seconds 60] [--checkout DIR]
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Watch } from "@kubernetes/client-node";
import { Command } from "commander";
import { TENANTRY_NAMESPACE } from "../src/app/index.js";
import { pollUntil } from "../src/common/index.js";
import { loadClusterClient } from "../src/kube/index.js";
import { ClusterHarness, type ClusterState, webhookClientCaFile } from "../src/localcluster/index.js";

const program = new Command()
  .option("--components <list>", "what tenantry run runs (default: its own default)")
  .option("--seconds <n>", "how long to count", "60")
  .option(
    "--checkout <dir>",
    "the tenantry sources to run (node_modules beside them)",
    join(import.meta.dirname, ".."),
  )
  .parse();
const opts = program.opts<{ components?: string; seconds: string; checkout: string }>();
const seconds = Number(opts.seconds);

const dir = await mkdtemp(join(tmpdir(), "tenantry-lease-writes-"));
const harness = new ClusterHarness({ dir, log: () => {} });
let tenantry: ChildProcess | undefined;
try {
  const [state] = (await harness.up([{ name: "leases", nodes: 1 }])) as [ClusterState];
  tenantry = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(opts.checkout, "src", "cli", "main.ts"),
      "run",
      "--kubeconfig",
      state.kubeconfig,
      "--cluster",
      "leases",
      "--webhook-client-ca",
      webhookClientCaFile(state),
      ...(opts.components ? ["--components", opts.components] : []),
      "--log-level",
      "warn",
    ],
    { cwd: opts.checkout, stdio: ["ignore", "ignore", "inherit"] },
  );
  const client = loadClusterClient("lease-writes", state.kubeconfig);
  const held = () =>
    client.coordination
      .listNamespacedLease({ namespace: TENANTRY_NAMESPACE })
      .then(({ items }) => items.filter((l) => l.spec?.holderIdentity))
      .catch(() => []);
  const first = await pollUntil(async () => ((await held()).length ? true : undefined), {
    timeoutMs: 600_000,
    intervalMs: 1000,
  });
  if (!first) throw new Error("tenantry held no Lease within 10 minutes");
  // Every capability's controllers start leading within a few renewals of the first.
  await sleep(20_000);
  const writes = new Map<string, number>();
  const watching = await new Watch(client.kubeConfig).watch(
    `/apis/coordination.k8s.io/v1/namespaces/${TENANTRY_NAMESPACE}/leases`,
    {},
    (type: string, lease: { metadata?: { name?: string } }) => {
      if (type !== "MODIFIED" && type !== "ADDED") return;
      const name = lease.metadata?.name ?? "";
      writes.set(name, (writes.get(name) ?? 0) + 1);
    },
    () => undefined,
  );
  // The watch's first events are the Leases as they are (ADDED), not writes.
  await sleep(1000);
  writes.clear();
  await sleep(seconds * 1000);
  watching.abort();
  const perMinute = (n: number) => ((n * 60) / seconds).toFixed(1);
  process.stdout.write(
    `checkout ${opts.checkout}, --components ${opts.components ?? "(default)"}, ${seconds} s\n\n`,
  );
  process.stdout.write("| Lease | writes per minute |\n|---|---|\n");
  for (const [name, count] of [...writes].sort()) process.stdout.write(`| ${name} | ${perMinute(count)} |\n`);
  const total = [...writes.values()].reduce((a, b) => a + b, 0);
  process.stdout.write(`| total (${writes.size} Leases) | ${perMinute(total)} |\n`);
} finally {
  tenantry?.kill("SIGTERM");
  await sleep(3000);
  tenantry?.kill("SIGKILL");
  await harness.down().catch(() => {});
  await rm(dir, { recursive: true, force: true });
}
