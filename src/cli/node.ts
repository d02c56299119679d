/**
 * `tenantry node create|list|describe|delete`: worker nodes on demand (WorkerNode objects) from a
 * terminal, as the user of the kubeconfig (the owner is whoever asks). `create` and `delete`
 * follow the node through its phases with a progress line.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { AuthenticationV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import type { Command } from "commander";
import { createProgress, UserError } from "../common/index.js";
import { statusCode } from "../kube/index.js";
import { NODE_POLICIES, validateWorkerNode, type WorkerNode, type WorkerNodePhase } from "../nodes/index.js";
import {
  TENANTRY_GROUP,
  TENANTS_API_VERSION,
  TENANTS_VERSION,
  USER_LABEL,
  userLabelValue,
} from "../tenants/index.js";
import { loadKubeConfig } from "./kube-context.js";
import { age, apiFailure, collect, EXIT } from "./objects.js";
import { columns, type OutputFormat, printResult } from "./output.js";

const coordinates = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: "workernodes" };

/** The way to Running, for the progress bar. */
const STEPS: readonly WorkerNodePhase[] = ["Building", "Available", "Joining", "Running"];

function clients(command: Command) {
  const { kubeconfig } = command.optsWithGlobals<{ kubeconfig?: string }>();
  const kc = loadKubeConfig(kubeconfig);
  return {
    custom: kc.makeApiClient(CustomObjectsApi),
    authentication: kc.makeApiClient(AuthenticationV1Api),
  };
}

function seconds(text: string, flag: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0)
    throw new UserError(`${flag} must be a whole number of seconds, got "${text}"`);
  return value;
}

async function read(command: Command, name: string): Promise<WorkerNode> {
  return (await clients(command)
    .custom.getClusterCustomObject({ ...coordinates, name })
    .catch((err) => apiFailure(err, `worker node "${name}"`))) as WorkerNode;
}

async function tryRead(command: Command, name: string): Promise<WorkerNode | undefined> {
  try {
    return (await clients(command).custom.getClusterCustomObject({ ...coordinates, name })) as WorkerNode;
  } catch (err) {
    if (statusCode(err) === 404) return undefined;
    throw err;
  }
}

/**
 * Every WorkerNode for an administrator; a tenant user may list only with a selector naming
 * themselves (tenantry's authorizer refuses a plain list), so theirs are listed that way.
 */
async function listVisible(command: Command): Promise<{ items: WorkerNode[] }> {
  const { custom, authentication } = clients(command);
  try {
    return (await custom.listClusterCustomObject({ ...coordinates })) as { items: WorkerNode[] };
  } catch (err) {
    if (statusCode(err) !== 403) apiFailure(err, "worker nodes");
  }
  const review = await authentication
    .createSelfSubjectReview({ body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" } })
    .catch((err) => apiFailure(err, "who you are"));
  const me = userLabelValue(review.status?.userInfo?.username ?? "");
  return (await custom
    .listClusterCustomObject({ ...coordinates, labelSelector: `${USER_LABEL}=${me}` })
    .catch((err) => apiFailure(err, "worker nodes"))) as { items: WorkerNode[] };
}

function row(node: WorkerNode): string[] {
  return [
    node.metadata!.name!,
    node.status?.phase ?? "",
    node.metadata?.labels?.[USER_LABEL] ?? node.spec.owner ?? "",
    node.spec.policy,
    node.spec.provider,
    node.spec.flavor,
    node.status?.machine?.status ?? "",
    node.status?.machine?.ipv4 ?? "",
    age(node),
  ];
}

const HEADER = ["NAME", "PHASE", "OWNER", "POLICY", "PROVIDER", "VM FLAVOR", "VM STATUS", "VM IPV4", "AGE"];

function describe(node: WorkerNode): string {
  const status = node.status ?? {};
  const created = Date.parse(String(node.metadata?.creationTimestamp));
  const lines = [
    `Name:          ${node.metadata!.name}`,
    `Owner:         ${node.spec.owner ?? ""} (tenant ${node.spec.tenant ?? ""})`,
    `Policy:        ${node.spec.policy}`,
    `Provider:      ${node.spec.provider}`,
    `Flavor:        ${node.spec.flavor}`,
    ...(node.spec.image ? [`Image:         ${node.spec.image}`] : []),
    ...(node.spec.keyPair ? [`Key pair:      ${node.spec.keyPair}`] : []),
    ...(node.spec.securityGroups?.length ? [`Sec. groups:   ${node.spec.securityGroups.join(", ")}`] : []),
    ...(node.spec.availabilityZone ? [`Zone:          ${node.spec.availabilityZone}`] : []),
    `Phase:         ${status.phase ?? "(not seen yet)"}${status.reason ? ` (${status.reason})` : ""}`,
    ...(status.message ? [`Message:       ${status.message}`] : []),
    `Machine:       ${status.machine ? `${status.machine.id} ${status.machine.status ?? ""} ${status.machine.ipv4 ?? ""}`.trim() : "(none yet)"}`,
    ...(status.nodeName ? [`Node:          ${status.nodeName}`] : []),
    ...(status.joinDeadline && status.phase !== "Running" ? [`Join deadline: ${status.joinDeadline}`] : []),
  ];
  if (status.phases?.length) {
    lines.push("Phases:");
    for (const p of status.phases) {
      const after = Number.isNaN(created) ? "" : ` +${((Date.parse(p.time) - created) / 1000).toFixed(1)}s`;
      lines.push(`  ${p.phase.padEnd(10)} ${p.time}${after}`);
    }
  }
  if (status.conditions?.length) {
    lines.push("Conditions:");
    lines.push(
      ...columns([
        ["  TYPE", "STATUS", "REASON", "MESSAGE"],
        ...status.conditions.map((c) => [`  ${c.type}`, c.status, c.reason, c.message]),
      ]),
    );
  }
  return lines.join("\n");
}

/**
 * Follows the node until it is Running (or Failed), with the phases as a progress bar. Returns the
 * node as last seen; throws on Failed and on timeout.
 */
async function follow(
  command: Command,
  name: string,
  timeoutMs: number,
  quiet: boolean,
): Promise<WorkerNode> {
  const progress = quiet ? undefined : createProgress(`node ${name}`);
  const deadline = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    const node = await read(command, name);
    const phase = node.status?.phase;
    const step = phase ? STEPS.indexOf(phase) + 1 : 0;
    const detail = `${phase ?? "Pending"}${node.status?.machine?.status ? ` (VM ${node.status.machine.status})` : ""}`;
    if (detail !== last) {
      progress?.update(Math.max(step, 0), STEPS.length, detail);
      last = detail;
    }
    if (phase === "Running") {
      progress?.finish(`Running on ${node.status?.machine?.ipv4 ?? "its machine"}`);
      return node;
    }
    if (phase === "Failed") {
      progress?.finish("Failed");
      throw new UserError(
        `worker node "${name}" failed: ${node.status?.reason}: ${node.status?.message}`,
        EXIT.failure,
      );
    }
    if (Date.now() > deadline) {
      throw new UserError(
        `worker node "${name}" is still ${phase ?? "Pending"} after ${timeoutMs / 1000}s`,
        EXIT.failure,
      );
    }
    await sleep(500);
  }
}

function registerNodeCreate(node: Command): void {
  node
    .command("create")
    .description("ask for a worker node; follows it through Building, Available, Joining to Running")
    .argument("<name>", `node name (a DNS label)`)
    .requiredOption("--flavor <flavor>", "machine size, as the provider names it (kubectl get nodeproviders)")
    .option("--provider <name>", "NodeProvider", "simulated")
    .option("--policy <policy>", `${NODE_POLICIES.join(" or ")}`, "private")
    .option("--key-pair <name>", "SSH key pair of the provider")
    .option("--security-group <name>", "security group; repeatable", collect)
    .option("--image <image>", "machine image (default: the provider's)")
    .option("--availability-zone <zone>", "where the provider places the machine")
    .option("--tenant <tenant>", "the tenant it counts against, when you belong to several")
    .option("--drain-timeout <seconds>", "how long deletion waits for pods to be evicted before reporting it")
    .option("--no-wait", "return once the request is accepted")
    .option("--timeout <seconds>", "how long to wait for Running", "900")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (name: string, opts, command: Command) => {
      const body: WorkerNode = {
        apiVersion: TENANTS_API_VERSION,
        kind: "WorkerNode",
        metadata: { name },
        spec: {
          flavor: opts.flavor,
          provider: opts.provider,
          policy: opts.policy,
          ...(opts.keyPair ? { keyPair: opts.keyPair } : {}),
          ...(opts.securityGroup ? { securityGroups: opts.securityGroup } : {}),
          ...(opts.image ? { image: opts.image } : {}),
          ...(opts.availabilityZone ? { availabilityZone: opts.availabilityZone } : {}),
          ...(opts.tenant ? { tenant: opts.tenant } : {}),
          ...(opts.drainTimeout !== undefined
            ? { drainTimeoutSeconds: seconds(opts.drainTimeout, "--drain-timeout") }
            : {}),
        },
      };
      const violations = validateWorkerNode(body);
      if (violations.length) {
        const flag: Record<string, string> = { "spec.policy": "--policy", "metadata.name": "name" };
        throw new UserError(
          violations
            .map((v) => `${flag[v.field] ? `${flag[v.field]} (${v.field})` : v.field}: ${v.message}`)
            .join("; "),
          EXIT.badInput,
        );
      }
      await clients(command)
        .custom.createClusterCustomObject({ ...coordinates, body })
        .catch((err) => apiFailure(err, `worker node "${name}"`));
      const output = opts.output as OutputFormat;
      const final = opts.wait
        ? await follow(command, name, seconds(opts.timeout, "--timeout") * 1000, output !== "text")
        : await read(command, name);
      printResult(final, output, () =>
        opts.wait ? columns([HEADER, row(final)]).join("\n") : `worker node "${name}" requested`,
      );
    });
}

export function registerNodeCommands(program: Command): void {
  const node = program
    .command("node")
    .description("ask for worker nodes of your own, follow them, delete them");
  node.option(
    "--kubeconfig <path>",
    "cluster to talk to, as which user (default $KUBECONFIG, else the embedded home cluster)",
  );

  registerNodeCreate(node);

  node
    .command("list")
    .description("your worker nodes (all of them, for an administrator)")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (opts: { output: OutputFormat }, command: Command) => {
      const list = await listVisible(command);
      const items = list.items.sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
      printResult({ items }, opts.output, () =>
        items.length ? columns([HEADER, ...items.map(row)]).join("\n") : "no worker nodes",
      );
    });

  node
    .command("describe")
    .description("a worker node: its machine, its phases with their times, its conditions")
    .argument("<name>")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (name: string, opts: { output: OutputFormat }, command: Command) => {
      const found = await read(command, name);
      printResult(found, opts.output, () => describe(found));
    });

  node
    .command("delete")
    .description(
      "delete a worker node: cordon, drain (PodDisruptionBudgets respected), delete its Node and machine",
    )
    .argument("<name>")
    .option("--no-wait", "return once the deletion is accepted")
    .option("--timeout <seconds>", "how long to wait for it to be gone", "900")
    .action(async (name: string, opts: { wait: boolean; timeout: string }, command: Command) => {
      await clients(command)
        .custom.deleteClusterCustomObject({ ...coordinates, name })
        .catch((err) => apiFailure(err, `worker node "${name}"`));
      if (!opts.wait) {
        process.stdout.write(`worker node "${name}" is being deleted\n`);
        return;
      }
      const timeoutMs = seconds(opts.timeout, "--timeout") * 1000;
      const progress = createProgress(`deleting ${name}`);
      const deadline = Date.now() + timeoutMs;
      let last = "";
      for (;;) {
        const current = await tryRead(command, name);
        if (!current) break;
        const drained = current.status?.conditions?.find((c) => c.type === "Drained");
        const detail = `${current.status?.phase ?? ""} ${current.status?.reason ?? ""}`.trim();
        if (detail !== last) {
          progress.log(`${detail}${drained && drained.status !== "True" ? `: ${drained.message}` : ""}`);
          last = detail;
        }
        if (Date.now() > deadline) {
          throw new UserError(
            `worker node "${name}" is still ${detail} after ${timeoutMs / 1000}s`,
            EXIT.failure,
          );
        }
        await sleep(500);
      }
      progress.finish("deleted (its Node, machine and token are gone)");
    });
}
