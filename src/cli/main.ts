#!/usr/bin/env node
import tab from "@bomb.sh/tab/commander";
import { Command, CommanderError, Option } from "commander";
import type { OutputFormat } from "./output.js";
import { buildInfo, describeBuild } from "./version.js";

type Register = (program: Command) => void;

interface CommandModule {
  /** The top-level commands the module registers, with the summary `tenantry --help` lists. */
  commands: Readonly<Record<string, string>>;
  load: () => Promise<Register>;
}

/**
 * Every top-level command and the module that defines it. A module is loaded only when one of its
 * commands runs: together they load client-node, Fastify, the AWS SDK and more (over two thousand
 * modules), which `tenantry --help`, `tenantry version` and shell completion have no use for.
 * main.test.ts checks each summary against the command its module registers.
 */
export const COMMAND_MODULES: readonly CommandModule[] = [
  {
    commands: {
      up: "run tenantry on the embedded default: local clusters home, edge-1 and edge-2, and a demo tenant",
    },
    load: async () => (await import("./up.js")).registerUpCommand,
  },
  {
    commands: { run: "run tenantry's controllers, admission webhooks and APIs against a cluster" },
    load: async () => (await import("./run.js")).registerRunCommand,
  },
  {
    commands: { tenant: "create, inspect and delete tenants" },
    load: async () => (await import("./tenant.js")).registerTenantCommands,
  },
  {
    commands: {
      user: "users of the built-in identity service, and client certificates signed by each cluster of their tenant",
    },
    load: async () => (await import("./user.js")).registerUserCommands,
  },
  {
    commands: {
      login: "log in to tenantry's identity service and write a kubeconfig for kubectl",
      logout: "revoke the token of a kubeconfig written by `tenantry login`",
    },
    load: async () => (await import("./login.js")).registerLoginCommands,
  },
  {
    commands: { dev: "local Kubernetes clusters built from the real components" },
    load: async () => (await import("./dev.js")).registerDevCommands,
  },
  {
    commands: {
      peer: "peer two clusters: the consumer gets a bounded tenant in the provider and a virtual node standing for it",
      unpeer:
        "remove a peering on both sides: the Peering, its Secret and virtual node; the provider's tenant, its namespaces and RBAC",
    },
    load: async () => (await import("./peer.js")).registerPeerCommands,
  },
  {
    commands: {
      offload:
        "offload a namespace to peered clusters chosen by their labels (creates or updates its NamespaceOffloading)",
      unoffload:
        "stop offloading a namespace: its replicas in the peered clusters are deleted, then its NamespaceOffloading",
      status: "peerings and offloaded namespaces of a cluster",
    },
    load: async () => (await import("./offload.js")).registerOffloadCommands,
  },
  {
    commands: { runtime: "per-user runtimes: start, watch, stop, delete, back up, restore" },
    load: async () => (await import("./runtime.js")).registerRuntimeCommands,
  },
  {
    commands: { monitor: "monitor rules and the alerts firing now" },
    load: async () => (await import("./monitor.js")).registerMonitorCommands,
  },
  {
    commands: { cluster: "the cluster registry: clusters logical clouds and peerings select by label" },
    load: async () => (await import("./cluster.js")).registerClusterCommands,
  },
  {
    commands: {
      cloud:
        "logical clouds: one namespace, quota, users and permissions on every cluster chosen by name or label",
    },
    load: async () => (await import("./cloud.js")).registerCloudCommands,
  },
  {
    commands: { node: "ask for worker nodes of your own, follow them, delete them" },
    load: async () => (await import("./node.js")).registerNodeCommands,
  },
  {
    commands: {
      grant: "AccessGrants: let another tenant, user or group do named things in one of your namespaces",
      template: "NamespaceTemplates: objects rendered into every tenant namespace that uses them",
      quota: "TenantResourceQuotas: limits summed over a tenant's namespaces (or one user's objects there)",
      replicate:
        "ReplicatedDeployments: one Deployment per region (or other label) over the clusters a namespace is offloaded to",
      "volume-pool":
        "VolumePools: a StorageClass whose volumes are allocated ahead of demand (and encrypted per tenant)",
    },
    load: async () => (await import("./capabilities.js")).registerCapabilityCommands,
  },
  {
    commands: {
      doctor:
        "check an installation: CRDs and versions, webhooks (registration, CA, reachability), certificates, leader, kube-apiserver's token and authorization webhooks; exit 1 on errors",
    },
    load: async () => (await import("./doctor.js")).registerDoctorCommand,
  },
];

/**
 * The top-level command that `args` (the command line without node and the script) runs or asks
 * help or completions for; undefined for the program's own help.
 */
export function commandNamed(args: readonly string[]): string | undefined {
  const operands = (from: number) => args.slice(from).filter((arg) => !arg.startsWith("-"));
  const [first, second] = operands(0);
  if (first === "help") return second;
  // A shell asking for completions: `complete -- <the words typed so far>`.
  if (first === "complete" && args.includes("--")) return operands(args.indexOf("--") + 1)[0];
  return first;
}

/**
 * The CLI for `args`: the module of the command they name is loaded, every other command is only
 * its name and summary. `name` is how it was called: `tenantry`, or `kubectl tenantry` as kubectl's
 * plugin (kubectl completes its plugins itself, through kubectl_complete-tenantry).
 */
export async function buildProgram(args: readonly string[] = [], name = "tenantry"): Promise<Command> {
  const build = buildInfo();
  const program = new Command(name)
    .description("multi-tenant, multi-cluster control plane for Kubernetes")
    .version(describeBuild(build), "-V, --version", "the version and git commit of this build")
    .showHelpAfterError()
    .exitOverride();
  const wanted = commandNamed(args);
  for (const module of COMMAND_MODULES) {
    if (wanted !== undefined && Object.hasOwn(module.commands, wanted)) {
      (await module.load())(program);
      continue;
    }
    for (const [command, summary] of Object.entries(module.commands)) {
      program.command(command).description(summary).allowUnknownOption().allowExcessArguments();
    }
  }
  program
    .command("version")
    .description("the version and git commit of this build")
    .addOption(new Option("-o, --output <format>", "text, json or yaml").default("text"))
    .action(async (opts: { output: OutputFormat }) => {
      const { printResult } = await import("./output.js");
      printResult(build, opts.output, () => describeBuild(build));
    });
  // `completion bash|zsh|fish|powershell` prints the script; the shell then calls `complete -- …`.
  if (name === "tenantry") tab(program, { completionCommandName: "completion" });
  return program;
}

export async function main(argv = process.argv, name = "tenantry"): Promise<number> {
  try {
    await (await buildProgram(argv.slice(2), name)).parseAsync(argv);
    // A command that finished but failed (a backup that failed, a doctor that found errors) set it.
    return Number(process.exitCode ?? 0);
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    const report = (await import("./error-report.js")).errorReport(err);
    process.stderr.write(`error: ${report.message}\n`);
    if (process.env.TENANTRY_DEBUG && err instanceof Error) process.stderr.write(`${err.stack ?? ""}\n`);
    return report.exitCode;
  }
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith("/cli/main.ts")) {
  process.exitCode = await main();
}
