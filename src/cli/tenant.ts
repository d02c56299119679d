import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { Command } from "commander";
import { stringify } from "yaml";
import { pollUntil, toAmounts, UserError } from "../common/index.js";
import { ignoreNotFound } from "../kube/index.js";
import {
  OWNER_KINDS,
  POD_SECURITY_LEVELS,
  TENANTRY_GROUP,
  TENANTS_API_VERSION,
  TENANTS_VERSION,
  type Tenant,
  validateTenant,
  withTenantDefaults,
} from "../tenants/index.js";
import { loadKubeConfig } from "./kube-context.js";
import { apiFailure, collect, EXIT, parseResourceList, readyOf } from "./objects.js";
import { type OutputFormat, printResult } from "./output.js";

const coordinates = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: "tenants" };

function api(command: Command): CustomObjectsApi {
  const { kubeconfig } = command.optsWithGlobals<{ kubeconfig?: string }>();
  return loadKubeConfig(kubeconfig).makeApiClient(CustomObjectsApi);
}

function parseOwner(text: string): { kind: (typeof OWNER_KINDS)[number]; name: string } {
  const match = /^(User|Group|ServiceAccount):(.+)$/.exec(text);
  if (!match)
    throw new UserError(
      `--owner "${text}" must be Kind:name with Kind one of ${OWNER_KINDS.join(", ")}, e.g. User:alice`,
    );
  return { kind: match[1] as (typeof OWNER_KINDS)[number], name: match[2]! };
}

async function readTenant(command: Command, name: string): Promise<Tenant> {
  return (await api(command)
    .getClusterCustomObject({ ...coordinates, name })
    .catch((err) => apiFailure(err, `tenant "${name}"`))) as Tenant;
}

/** A row of █ proportional to used/hard, for `tenant usage`. */
function bar(used: bigint, hard: bigint, width = 20): string {
  if (hard <= 0n) return "";
  const filled = Number((used * BigInt(width)) / hard);
  return `${"█".repeat(Math.min(filled, width))}${"░".repeat(Math.max(width - filled, 0))}`;
}

function registerTenantCreate(tenant: Command): void {
  tenant
    .command("create")
    .description("create a tenant")
    .argument("<name>", "tenant name")
    .requiredOption(
      "--owner <Kind:name>",
      "owner, repeatable: User:alice, Group:devs, ServiceAccount:system:serviceaccount:ns:sa",
      collect,
    )
    .option("--namespace <name>", "declared namespace, created as <tenant>-<name>; repeatable", collect)
    .option("--namespace-quota <n>", "namespaces the owners may create themselves", (v) => Number(v))
    .option("--quota <list>", "aggregate quota, e.g. pods=20,requests.cpu=4")
    .option("--pod-security <level>", `one of ${POD_SECURITY_LEVELS.join(", ")} (default restricted)`)
    .option(
      "--registry <name>",
      "registry (or registry/path) the tenant's images may come from, e.g. quay.io/acme; repeatable (default any)",
      collect,
    )
    .option(
      "--minimal",
      "only what the flags say: no default quota, limit ranges, restricted pod security or pull policy",
    )
    .option("--dry-run", "validate and print, change nothing")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (name: string, opts, command: Command) => {
      const spec = {
        owners: (opts.owner as string[]).map(parseOwner),
        ...(opts.namespace ? { namespaces: (opts.namespace as string[]).map((n) => ({ name: n })) } : {}),
        ...(opts.namespaceQuota !== undefined ? { namespaceQuota: opts.namespaceQuota } : {}),
        ...(opts.quota ? { quota: { hard: parseResourceList(opts.quota, "--quota") } } : {}),
        ...(opts.podSecurity ? { podSecurity: { level: opts.podSecurity } } : {}),
        ...(opts.registry ? { allowed: { containerRegistries: { names: opts.registry as string[] } } } : {}),
      } as Tenant["spec"];
      const body: Tenant = {
        apiVersion: TENANTS_API_VERSION,
        kind: "Tenant",
        metadata: { name },
        spec: opts.minimal ? spec : withTenantDefaults(spec),
      };
      const violations = validateTenant(body);
      if (violations.length > 0) {
        throw new UserError(violations.map((v) => `${v.field}: ${v.message}`).join("; "), EXIT.badInput);
      }
      const created = opts.dryRun
        ? body
        : ((await api(command)
            .createClusterCustomObject({ ...coordinates, body })
            .catch((err) => apiFailure(err, `tenant "${name}"`))) as Tenant);
      printResult(
        created,
        opts.output as OutputFormat,
        () => `tenant/${name} ${opts.dryRun ? "valid (dry run)" : "created"}`,
      );
    });
}

function registerTenantList(tenant: Command): void {
  tenant
    .command("list")
    .description("list tenants with owners, namespaces, usage and readiness")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (opts: { output: OutputFormat }, command: Command) => {
      const list = (await api(command)
        .listClusterCustomObject(coordinates)
        .catch((err) => apiFailure(err, "tenants"))) as { items: Tenant[] };
      printResult(list.items, opts.output, () =>
        [
          ["NAME", "OWNERS", "NAMESPACES", "QUOTA", "READY"].join("\t"),
          ...list.items.map((t) =>
            [
              t.metadata?.name,
              t.status?.ownerSummary ?? "",
              t.status?.namespaceCount ?? 0,
              t.status?.usage?.summary ?? "",
              readyOf(t),
            ].join("\t"),
          ),
        ].join("\n"),
      );
    });
}

function registerTenantDescribe(tenant: Command): void {
  tenant
    .command("describe")
    .description("show a tenant's spec, namespaces, usage and conditions")
    .argument("<name>", "tenant name")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (name: string, opts: { output: OutputFormat }, command: Command) => {
      const t = await readTenant(command, name);
      printResult(t, opts.output, () =>
        [
          `Name:        ${name}`,
          `Owners:      ${t.spec.owners.map((o) => `${o.kind}/${o.name}`).join(", ")}`,
          `Namespaces:  ${(t.status?.namespaces ?? []).join(", ") || "(none)"}`,
          `Namespace quota: ${t.spec.namespaceQuota ?? "unlimited"}`,
          `Pod security: ${t.spec.podSecurity?.level ?? "baseline"}`,
          `Cordoned:    ${t.spec.cordoned ? "yes" : "no"}`,
          `Usage:       ${t.status?.usage?.summary ?? "(no quota)"}`,
          "Conditions:",
          ...(t.status?.conditions ?? []).map((c) => `  ${c.type}=${c.status} ${c.reason}: ${c.message}`),
          "",
          stringify({ spec: t.spec }).trimEnd(),
        ].join("\n"),
      );
    });
}

function registerTenantUsage(tenant: Command): void {
  tenant
    .command("usage")
    .description("usage against the tenant's quota, per resource")
    .argument("<name>", "tenant name")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (name: string, opts: { output: OutputFormat }, command: Command) => {
      const t = await readTenant(command, name);
      const hard = toAmounts(t.status?.usage?.hard);
      const used = toAmounts(t.status?.usage?.used);
      const rows = [...hard].map(([resource, limit]) => ({
        resource,
        used: t.status?.usage?.used?.[resource] ?? "0",
        hard: String(t.status?.usage?.hard?.[resource]),
        percent: limit > 0n ? Number(((used.get(resource) ?? 0n) * 1000n) / limit) / 10 : 0,
        bar: bar(used.get(resource) ?? 0n, limit),
      }));
      printResult(rows, opts.output, () =>
        rows.length === 0
          ? `tenant "${name}" has no quota`
          : [
              "RESOURCE\tUSED\tHARD\t%\t",
              ...rows.map((r) => `${r.resource}\t${r.used}\t${r.hard}\t${r.percent.toFixed(1)}\t${r.bar}`),
            ].join("\n"),
      );
    });
}

export function registerTenantCommands(program: Command): void {
  const tenant = program.command("tenant").description("create, inspect and delete tenants");
  tenant.option(
    "--kubeconfig <path>",
    "cluster to talk to (default $KUBECONFIG, else the embedded home cluster)",
  );

  registerTenantCreate(tenant);
  registerTenantList(tenant);
  registerTenantDescribe(tenant);
  registerTenantUsage(tenant);

  for (const [verb, cordoned] of [
    ["cordon", true],
    ["uncordon", false],
  ] as const) {
    tenant
      .command(verb)
      .description(
        cordoned
          ? "freeze a tenant: its users may create, change and delete nothing until it is uncordoned"
          : "let a cordoned tenant's users work again",
      )
      .argument("<name>", "tenant name")
      .action(async (name: string, _opts, command: Command) => {
        await api(command)
          .patchClusterCustomObject(
            { ...coordinates, name, body: { spec: { cordoned } } },
            setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
          )
          .catch((err) => apiFailure(err, `tenant "${name}"`));
        process.stdout.write(`tenant/${name} ${cordoned ? "cordoned" : "uncordoned"}\n`);
      });
  }

  tenant
    .command("delete")
    .description("delete a tenant; its namespaces and everything in them go with it")
    .argument("<name>", "tenant name")
    .option("--wait", "wait until the tenant and its namespaces are gone")
    .action(async (name: string, opts: { wait?: boolean }, command: Command) => {
      const client = api(command);
      await client
        .deleteClusterCustomObject({ ...coordinates, name, propagationPolicy: "Foreground" })
        .catch((err) => apiFailure(err, `tenant "${name}"`));
      if (opts.wait) {
        const gone = await pollUntil(
          async () =>
            (await ignoreNotFound(client.getClusterCustomObject({ ...coordinates, name })))
              ? undefined
              : true,
          { timeoutMs: 5 * 60_000, intervalMs: 500 },
        );
        if (!gone) throw new Error(`tenant "${name}" still exists after 5 minutes`);
      }
      process.stdout.write(`tenant/${name} deleted\n`);
    });
}
