/**
 * `tenantry quota create|list|get|delete`: TenantResourceQuotas — limits summed over every
 * namespace of a tenant (or over one user's objects in it), enforced race-free at admission.
 */
import type { Command } from "commander";
import { toAmounts, UserError } from "../common/index.js";
import {
  TENANT_RESOURCE_QUOTA_CRD,
  TENANTS_API_VERSION,
  type TenantResourceQuota,
} from "../tenants/index.js";
import {
  age,
  collect,
  createObject,
  type ObjectKind,
  objectGroup,
  parseResourceList,
  registerObjectCommands,
} from "./objects.js";
import { columns } from "./output.js";

/** `NAMESPACE:pods=5,requests.cpu=1`: a quota for one namespace of the tenant. */
function parseNamespaceQuota(text: string) {
  const colon = text.indexOf(":");
  if (colon <= 0)
    throw new UserError(
      `--namespace-quota "${text}" must be namespace:name=quantity,…, e.g. acme-dev:pods=5`,
    );
  return {
    namespace: text.slice(0, colon),
    hard: parseResourceList(text.slice(colon + 1), `--namespace-quota ${text.slice(0, colon)}`),
  };
}

/** Each limited resource's used/hard and share, most used first. */
function usageRows(q: TenantResourceQuota): string[][] {
  const hard = q.status?.hard ?? q.spec.hard;
  const used = toAmounts(q.status?.used);
  return Object.entries(hard)
    .map(([resource, limit]) => {
      const max = toAmounts({ [resource]: limit }).get(resource) ?? 0n;
      const amount = used.get(resource) ?? 0n;
      const percent = max > 0n ? Number((amount * 1000n) / max) / 10 : amount > 0n ? 100 : 0;
      return { resource, used: String(q.status?.used?.[resource] ?? 0), hard: String(limit), percent };
    })
    .sort((a, b) => b.percent - a.percent || a.resource.localeCompare(b.resource))
    .map((r) => [`  ${r.resource}`, r.used, r.hard, r.percent.toFixed(1)]);
}

const quotas: ObjectKind<TenantResourceQuota> = {
  crd: TENANT_RESOURCE_QUOTA_CRD,
  noun: "tenant resource quota",
  columns: [
    ["NAME", (q) => q.metadata!.name!],
    ["TENANT", (q) => q.spec.tenant],
    ["USER", (q) => q.spec.user ?? ""],
    ["USAGE", (q) => q.status?.summary ?? ""],
    ["AGE", (q) => age(q)],
  ],
  describe: (q) =>
    [
      `Name:    ${q.metadata!.name}`,
      `Tenant:  ${q.spec.tenant}`,
      ...(q.spec.user ? [`User:    ${q.spec.user} (only objects this user created count)`] : []),
      ...(q.spec.scopes?.length ? [`Scopes:  ${q.spec.scopes.join(", ")}`] : []),
      ...columns([["  RESOURCE", "USED", "HARD", "%"], ...usageRows(q)]),
      ...(q.spec.namespaceQuotas ?? []).map(
        (n) =>
          `Namespace ${n.namespace}: ${Object.entries(n.hard)
            .map(([k, v]) => `${k}=${v}`)
            .join(", ")}`,
      ),
    ].join("\n"),
  flags: {
    "spec.tenant": "--tenant",
    "spec.user": "--user",
    "spec.hard": "--hard",
    "spec.scopes": "--scope",
    "spec.namespaceQuotas": "--namespace-quota",
  },
};

export function registerQuotaCommands(program: Command): void {
  const group = objectGroup(
    program,
    "quota",
    quotas,
    "TenantResourceQuotas: limits summed over a tenant's namespaces (or one user's objects there)",
  );
  group
    .command("create")
    .description("limit what a tenant (or one of its users) may use across all its namespaces")
    .argument("<name>", "quota name")
    .requiredOption("--tenant <tenant>", "the tenant whose namespaces it covers")
    .requiredOption("--hard <list>", "limits, e.g. pods=20,requests.cpu=4,count/deployments.apps=10")
    .option("--user <name>", "count only the objects this user created (tenantry.dev/user)")
    .option("--scope <scope>", "count only objects in this scope, repeatable (e.g. NotTerminating)", collect)
    .option(
      "--namespace-quota <namespace:list>",
      "a quota for one namespace within the limits, repeatable, e.g. acme-dev:pods=5",
      collect,
    )
    .option("--dry-run", "validate (here and by the API server), create nothing")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (name: string, opts, command: Command) => {
      const body: TenantResourceQuota = {
        apiVersion: TENANTS_API_VERSION,
        kind: "TenantResourceQuota",
        metadata: { name },
        spec: {
          tenant: opts.tenant,
          hard: parseResourceList(opts.hard as string, "--hard"),
          ...(opts.user ? { user: opts.user } : {}),
          ...(opts.scope ? { scopes: opts.scope } : {}),
          ...(opts.namespaceQuota
            ? { namespaceQuotas: (opts.namespaceQuota as string[]).map(parseNamespaceQuota) }
            : {}),
        },
      };
      await createObject(command, quotas, body, opts);
    });
  registerObjectCommands(group, quotas);
}
