/**
 * `tenantry runtime backup|backups|restore`: a runtime's backups through the cluster's API (as the
 * cluster admin, or anyone allowed RuntimeBackups and RuntimeRestores in the runtime's namespace).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Command } from "commander";
import type { RuntimeBackup, RuntimeRestore } from "../backup/index.js";
import { createProgress, UserError } from "../common/index.js";
import { ClusterClient, describeError, isAlreadyExists } from "../kube/index.js";
import type { Runtime } from "../runtimes/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import { loadKubeConfig } from "./kube-context.js";
import { EXIT } from "./objects.js";
import { columns, type OutputFormat, printResult } from "./output.js";

interface BackupOptions {
  kubeconfig?: string;
  user: string;
  output: OutputFormat;
  wait: boolean;
}

function clientOf(opts: BackupOptions): ClusterClient {
  return new ClusterClient("cli", loadKubeConfig(opts.kubeconfig));
}

async function findRuntime(
  client: ClusterClient,
  user: string,
  service: string,
  instance: string,
): Promise<Runtime> {
  const runtimes = (await client.objects.list(TENANTS_API_VERSION, "Runtime")).items as Runtime[];
  const found = runtimes.find(
    (r) => r.spec.user === user && r.spec.service === service && r.spec.instance === instance,
  );
  if (!found) throw new UserError(`runtime ${service}/${instance} of user ${user} not found`, EXIT.notFound);
  return found;
}

const stamp = () => new Date().toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);

function age(time?: string): string {
  if (!time) return "";
  const seconds = Math.round((Date.now() - Date.parse(time)) / 1000);
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  return seconds < 172_800 ? `${Math.round(seconds / 3600)}h` : `${Math.round(seconds / 86_400)}d`;
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** Waits for the phase to end, showing it; exits 1 when it failed. */
async function follow<T extends RuntimeBackup | RuntimeRestore>(
  client: ClusterClient,
  obj: T,
  label: string,
  quiet: boolean,
): Promise<T> {
  const progress = quiet ? undefined : createProgress(label);
  for (;;) {
    const current = (await client.objects.read({
      apiVersion: TENANTS_API_VERSION,
      kind: obj.kind!,
      metadata: { name: obj.metadata!.name!, namespace: obj.metadata!.namespace! },
    })) as unknown as T;
    const phase = current.status?.phase ?? "Pending";
    if (phase === "Completed" || phase === "Failed") {
      progress?.finish(`${phase}: ${current.status?.message ?? ""}`);
      return current;
    }
    progress?.update(phase === "Running" ? 1 : 0, 2, current.status?.message ?? phase);
    await sleep(1000);
  }
}

function withOptions(command: Command): Command {
  return command
    .requiredOption("--user <name>", "whose runtime")
    .option(
      "--kubeconfig <file>",
      "kubeconfig of the runtimes' cluster (default: KUBECONFIG, else the embedded default's home)",
    )
    .option("-o, --output <format>", "text, json or yaml", "text");
}

function summary(obj: RuntimeBackup | RuntimeRestore): string {
  const s = obj.status;
  return `${obj.kind?.replace("Runtime", "").toLowerCase()} ${obj.metadata?.name}: ${s?.phase ?? "Pending"}${s?.reason && s.phase === "Failed" ? ` (${s.reason})` : ""}${s?.message ? ` — ${s.message}` : ""}`;
}

async function createOrExplain(client: ClusterClient, obj: KubernetesObject): Promise<void> {
  try {
    await client.objects.create(obj);
  } catch (err) {
    if (isAlreadyExists(err))
      throw new UserError(`${obj.kind} ${obj.metadata?.name} already exists`, EXIT.exists);
    throw new UserError(`${obj.kind} ${obj.metadata?.name}: ${describeError(err)}`, EXIT.badInput);
  }
}

export function registerBackupCommands(runtime: Command): void {
  withOptions(
    runtime
      .command("backup")
      .description("back up a runtime now: its metadata and its volumes' data, to the object store")
      .argument("<service>")
      .argument("<instance>")
      .option("--no-wait", "answer at once instead of following the backup"),
  ).action(async (service: string, instance: string, opts: BackupOptions) => {
    const client = clientOf(opts);
    const target = await findRuntime(client, opts.user, service, instance);
    const backup = {
      apiVersion: TENANTS_API_VERSION,
      kind: "RuntimeBackup",
      metadata: {
        name: `${target.metadata!.name}-${stamp()}`.slice(0, 253),
        namespace: target.metadata!.namespace,
      },
      spec: { runtime: target.metadata!.name!, trigger: "Manual" },
    } as RuntimeBackup;
    await createOrExplain(client, backup as KubernetesObject);
    const result = opts.wait
      ? await follow(client, backup, `backup ${backup.metadata!.name}`, opts.output !== "text")
      : backup;
    printResult(result, opts.output, () => summary(result));
    if (result.status?.phase === "Failed") process.exitCode = EXIT.failure;
  });

  withOptions(
    runtime
      .command("backups")
      .description("a runtime's backups, newest first")
      .argument("<service>")
      .argument("<instance>"),
  ).action(async (service: string, instance: string, opts: BackupOptions) => {
    const client = clientOf(opts);
    const target = await findRuntime(client, opts.user, service, instance);
    const all = (await client.objects.list(TENANTS_API_VERSION, "RuntimeBackup", target.metadata!.namespace))
      .items as RuntimeBackup[];
    const mine = all
      .filter((b) => b.spec.runtime === target.metadata!.name)
      .sort((a, b) =>
        (b.metadata?.creationTimestamp ?? "")
          .toString()
          .localeCompare((a.metadata?.creationTimestamp ?? "").toString()),
      );
    printResult(mine, opts.output, () =>
      mine.length === 0
        ? `no backups of ${service}/${instance}`
        : columns([
            ["NAME", "PHASE", "TRIGGER", "SIZE", "AGE", "REASON"],
            ...mine.map((b) => [
              b.metadata!.name!,
              b.status?.phase ?? "Pending",
              b.spec.trigger ?? "Manual",
              mib((b.status?.volumes ?? []).reduce((n, v) => n + (v.size ?? 0), 0)),
              age(b.metadata?.creationTimestamp as unknown as string),
              b.status?.phase === "Failed" ? `${b.status.reason}: ${b.status.message}` : "",
            ]),
          ]).join("\n"),
    );
  });

  withOptions(
    runtime
      .command("restore")
      .description(
        "restore a backup into the runtime (stopped, or deleted: it is created again), then start it",
      )
      .argument("<service>")
      .argument("<instance>")
      .argument("<backup>", "a name `tenantry runtime backups` lists")
      .option("--no-start", "leave the runtime stopped once its data is back")
      .option("--no-wait", "answer at once instead of following the restore"),
  ).action(
    async (
      service: string,
      instance: string,
      backupName: string,
      opts: BackupOptions & { start: boolean },
    ) => {
      const client = clientOf(opts);
      const backups = (await client.objects.list(TENANTS_API_VERSION, "RuntimeBackup"))
        .items as RuntimeBackup[];
      const backup = backups.find((b) => b.metadata?.name === backupName);
      if (!backup) throw new UserError(`backup ${backupName} not found`, EXIT.notFound);
      // The runtime may be gone (deleted or torn down): the backup names where it was.
      const runtime = await findRuntime(client, opts.user, service, instance).catch((err) => {
        if (err instanceof UserError) return undefined;
        throw err;
      });
      if (runtime && runtime.metadata?.namespace !== backup.metadata?.namespace)
        throw new UserError(`backup ${backupName} is not a backup of ${service}/${instance}`, EXIT.badInput);
      const restore = {
        apiVersion: TENANTS_API_VERSION,
        kind: "RuntimeRestore",
        metadata: {
          name: `${backupName.slice(0, 200)}-restore-${stamp()}`,
          namespace: backup.metadata!.namespace,
        },
        spec: { backup: backupName, startAfter: opts.start },
      } as RuntimeRestore;
      await createOrExplain(client, restore as KubernetesObject);
      const result = opts.wait
        ? await follow(client, restore, `restore ${backupName}`, opts.output !== "text")
        : restore;
      printResult(result, opts.output, () => summary(result));
      if (result.status?.phase === "Failed") process.exitCode = EXIT.failure;
    },
  );
}
