/**
 * `tenantry grant create|list|get|delete`: AccessGrants — a tenant's owner lets another tenant, a
 * user or a group do exactly the named verbs on the named resources of one namespace. Deleting
 * the grant revokes it.
 */
import type { Command } from "commander";
import {
  ACCESS_GRANT_CRD,
  type AccessGrant,
  GRANTABLE_VERBS,
  GRANTEE_KINDS,
  type GrantRule,
} from "../access/index.js";
import { UserError } from "../common/index.js";
import { parseDuration } from "../identity/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import {
  age,
  collect,
  createObject,
  namespaceOf,
  type ObjectKind,
  objectGroup,
  registerObjectCommands,
} from "./objects.js";
import { columns } from "./output.js";

/** `verbs:resources[:apiGroups[:names]]`, each a comma list; no API groups: the core group. */
export function parseGrantRule(text: string): GrantRule {
  const [verbs, resources, apiGroups, names, ...rest] = text.split(":");
  if (!verbs || !resources || rest.length) {
    throw new UserError(
      `--rule "${text}" must be verbs:resources[:apiGroups[:names]], e.g. get,list:configmaps or get:deployments:apps:web`,
    );
  }
  const list = (value: string) => value.split(",").map((v) => v.trim());
  return {
    verbs: list(verbs) as GrantRule["verbs"],
    resources: list(resources),
    apiGroups: apiGroups ? list(apiGroups) : [""],
    ...(names ? { resourceNames: list(names) } : {}),
  };
}

function parseGrantee(text: string): AccessGrant["spec"]["grantees"][number] {
  const colon = text.indexOf(":");
  const kind = text.slice(0, colon);
  if (colon <= 0 || !(GRANTEE_KINDS as readonly string[]).includes(kind)) {
    throw new UserError(
      `--grantee "${text}" must be Kind:name with Kind one of ${GRANTEE_KINDS.join(", ")}, e.g. Tenant:acme or User:bob`,
    );
  }
  return { kind: kind as (typeof GRANTEE_KINDS)[number], name: text.slice(colon + 1) };
}

function ruleText(rule: GrantRule): string {
  const groups = rule.apiGroups.map((g) => g || "core").join(",");
  return `${rule.verbs.join(",")} ${rule.resources.join(",")}${groups === "core" ? "" : ` (${groups})`}${rule.resourceNames?.length ? ` named ${rule.resourceNames.join(",")}` : ""}`;
}

const grants: ObjectKind<AccessGrant> = {
  crd: ACCESS_GRANT_CRD,
  noun: "access grant",
  columns: [
    ["NAME", (g) => g.metadata!.name!],
    ["GRANTEES", (g) => g.spec.grantees.map((x) => `${x.kind}/${x.name}`).join(", ")],
    ["RULES", (g) => g.spec.rules.map(ruleText).join("; ")],
    ["EXPIRES", (g) => g.spec.expiresAt ?? ""],
    ["AGE", (g) => age(g)],
  ],
  describe: (g) =>
    [
      `Name:       ${g.metadata!.name}`,
      `Namespace:  ${g.metadata!.namespace}`,
      `Grantees:   ${g.spec.grantees.map((x) => `${x.kind}/${x.name}`).join(", ")}`,
      `Expires:    ${g.spec.expiresAt ?? "never"}`,
      "Rules:",
      ...columns([
        ["  VERBS", "RESOURCES", "API GROUPS", "NAMES"],
        ...g.spec.rules.map((r) => [
          `  ${r.verbs.join(",")}`,
          r.resources.join(","),
          r.apiGroups.map((x) => x || '""').join(","),
          r.resourceNames?.join(",") ?? "(all)",
        ]),
      ]),
    ].join("\n"),
  flags: { "spec.grantees": "--grantee", "spec.rules": "--rule", "spec.expiresAt": "--expires" },
};

export function registerGrantCommands(program: Command): void {
  const group = objectGroup(
    program,
    "grant",
    grants,
    "AccessGrants: let another tenant, user or group do named things in one of your namespaces",
  );
  group
    .command("create")
    .description("grant access to the namespace's resources; delete the grant to revoke it")
    .argument("<name>", "grant name")
    .requiredOption(
      "--grantee <Kind:name>",
      `who receives the access, repeatable: ${GRANTEE_KINDS.map((k) => `${k}:name`).join(", ")}`,
      collect,
    )
    .requiredOption(
      "--rule <verbs:resources[:apiGroups[:names]]>",
      `what they may do, repeatable, e.g. get,list:configmaps (verbs: ${GRANTABLE_VERBS.join(", ")})`,
      collect,
    )
    .option("--expires <time>", "when the grant stops applying (RFC 3339, e.g. 2030-01-01T00:00:00Z)")
    .option("--expires-in <duration>", "or how long from now it applies: 1h, 7d, 2w")
    .option("--dry-run", "validate (here and by the API server), create nothing")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (name: string, opts, command: Command) => {
      if (opts.expires && opts.expiresIn) throw new UserError("give --expires or --expires-in, not both");
      const expiresAt = opts.expiresIn
        ? new Date(Date.now() + parseDuration(opts.expiresIn as string) * 1000).toISOString()
        : (opts.expires as string | undefined);
      const body: AccessGrant = {
        apiVersion: TENANTS_API_VERSION,
        kind: "AccessGrant",
        metadata: { name, namespace: namespaceOf(command) },
        spec: {
          grantees: (opts.grantee as string[]).map(parseGrantee),
          rules: (opts.rule as string[]).map(parseGrantRule),
          ...(expiresAt ? { expiresAt } : {}),
        },
      };
      await createObject(command, grants, body, opts);
    });
  registerObjectCommands(group, grants);
}
