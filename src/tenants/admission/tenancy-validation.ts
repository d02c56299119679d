// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${namespace}` is the template placeholder syntax.
import { isDeepStrictEqual } from "node:util";
import type { V1Namespace } from "@kubernetes/client-node";
import { parseQuantity, QuantityError } from "../../common/index.js";
import type { ClusterClient } from "../../kube/index.js";
import {
  type AdmissionCheck,
  type AdmissionDecision,
  type AdmissionRequest,
  allow,
  deny,
} from "../../webhooks/index.js";
import { validateNamespaceTemplate, validateTenant, validateTenantResourceQuota } from "../api/crds.js";
import { TENANTRY_GROUP, TENANTRY_LABEL_PREFIX } from "../api/group.js";
import { BUILTIN_TEMPLATE_PARAMETERS, type NamespaceTemplate } from "../api/namespace-template.js";
import type { Tenant } from "../api/tenant.js";
import type { TenantResourceQuota } from "../api/tenant-resource-quota.js";
import { TENANT_LABEL } from "../controllers/labels.js";
import { declaredNamespaceName } from "../controllers/render.js";
import type { AdmissionContext } from "./context.js";
import { type TenantryIdentity, UNIVERSAL_GROUPS } from "./identity.js";

export interface Findings {
  violations: string[];
  /** Worth telling the author, but not wrong: something referenced does not exist yet. */
  warnings: string[];
}

/**
 * What validation compares an object with: the other tenants, quotas, templates and tenant
 * namespaces, looked up by name or by declared namespace (never scanned whole).
 */
export interface TenancyState {
  tenant(name: string): Tenant | undefined;
  quota(name: string): TenantResourceQuota | undefined;
  namespace(name: string): V1Namespace | undefined;
  template(name: string): NamespaceTemplate | undefined;
  /** Tenants whose spec.namespaces declare this namespace. */
  tenantsDeclaring(namespace: string): Tenant[];
}

/** A TenancyState over plain lists, for callers that hold a snapshot rather than informers. */
export function snapshotTenancyState(snapshot: {
  tenants?: Tenant[];
  quotas?: TenantResourceQuota[];
  namespaces?: V1Namespace[];
  templates?: NamespaceTemplate[];
}): TenancyState {
  const byName = <T extends { metadata?: { name?: string } }>(items: T[] = []) =>
    new Map(items.map((item) => [item.metadata?.name ?? "", item]));
  const tenants = byName(snapshot.tenants);
  const quotas = byName(snapshot.quotas);
  const namespaces = byName(snapshot.namespaces);
  const templates = byName(snapshot.templates);
  return {
    tenant: (name) => tenants.get(name),
    quota: (name) => quotas.get(name),
    namespace: (name) => namespaces.get(name),
    template: (name) => templates.get(name),
    tenantsDeclaring: (namespace) =>
      [...tenants.values()].filter((t) =>
        (t.spec.namespaces ?? []).some((d) => declaredNamespaceName(t.metadata!.name!, d.name) === namespace),
      ),
  };
}

/** Namespaces no tenant may declare or put a quota on: the cluster's and tenantry's, and `default`. */
function reservedNamespaces(identity: TenantryIdentity): Set<string> {
  return new Set([...identity.systemNamespaces, "default"]);
}

function compiles(regex: string): string | undefined {
  try {
    new RegExp(regex);
    return;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Checks a Tenant beyond its schema: references, conflicts with other tenants, expressions. */
export function tenantFindings(tenant: Tenant, state: TenancyState, identity: TenantryIdentity): Findings {
  const violations = validateTenant(tenant).map((v) => `${v.field}: ${v.message}`);
  const warnings: string[] = [];
  if (violations.length) return { violations, warnings };
  const name = tenant.metadata!.name!;
  const spec = tenant.spec;

  const seenOwners = new Map<string, number>();
  spec.owners.forEach((owner, i) => {
    const key = `${owner.kind === "Group" ? "Group" : "User"}/${owner.name}`;
    const first = seenOwners.get(key);
    if (first !== undefined) {
      violations.push(
        `spec.owners[${i}]: ${owner.kind} "${owner.name}" is the same owner as spec.owners[${first}]`,
      );
    } else seenOwners.set(key, i);
    if (owner.kind === "User" && owner.name.startsWith("system:serviceaccount:")) {
      violations.push(
        `spec.owners[${i}].kind: "${owner.name}" is a service account's username; use kind ServiceAccount`,
      );
    }
    if (owner.kind === "Group" && UNIVERSAL_GROUPS.includes(owner.name)) {
      violations.push(
        `spec.owners[${i}].name: group "${owner.name}" contains every user; name a narrower group`,
      );
    }
  });
  const seenUsers = new Map<string, number>();
  (spec.users ?? []).forEach((user, i) => {
    const first = seenUsers.get(user.name);
    if (first !== undefined)
      violations.push(`spec.users[${i}].name: "${user.name}" is already listed in spec.users[${first}]`);
    else seenUsers.set(user.name, i);
  });

  for (const kind of [
    "storageClasses",
    "ingressClasses",
    "priorityClasses",
    "runtimeClasses",
    "containerRegistries",
  ] as const) {
    const regex = spec.allowed?.[kind]?.regex;
    const error = regex === undefined ? undefined : compiles(regex);
    if (error)
      violations.push(`spec.allowed.${kind}.regex: "${regex}" is not a valid regular expression (${error})`);
  }

  const quotaRef = spec.quota?.quotaRef?.name;
  if (quotaRef) {
    const quota = state.quota(quotaRef);
    if (!quota) {
      warnings.push(`spec.quota.quotaRef.name: TenantResourceQuota "${quotaRef}" does not exist yet`);
    } else if (quota.spec.tenant !== name) {
      violations.push(
        `spec.quota.quotaRef.name: TenantResourceQuota "${quotaRef}" belongs to tenant "${quota.spec.tenant}", not "${name}"`,
      );
    } else if (quota.spec.user) {
      violations.push(
        `spec.quota.quotaRef.name: TenantResourceQuota "${quotaRef}" is the quota of user "${quota.spec.user}"; name a tenant-wide one`,
      );
    }
  }

  const reserved = reservedNamespaces(identity);
  (spec.namespaces ?? []).forEach((declared, i) => {
    const namespace = declaredNamespaceName(name, declared.name);
    const field = `spec.namespaces[${i}].name`;
    if (reserved.has(namespace)) {
      violations.push(`${field}: "${namespace}" is a system namespace and cannot belong to a tenant`);
      return;
    }
    const existing = state.namespace(namespace);
    const owner = existing?.metadata?.labels?.[TENANT_LABEL];
    if (owner && owner !== name) {
      violations.push(`${field}: namespace "${namespace}" already belongs to tenant "${owner}"`);
      return;
    }
    const rival = state.tenantsDeclaring(namespace).find((t) => t.metadata?.name !== name);
    if (rival)
      violations.push(`${field}: namespace "${namespace}" is declared by tenant "${rival.metadata!.name}"`);
  });

  const references = [
    ...(spec.templates ?? []).map((ref, i) => ({ ref, field: `spec.templates[${i}].name` })),
    ...(spec.namespaces ?? []).flatMap((ns, i) =>
      (ns.templates ?? []).map((ref, j) => ({ ref, field: `spec.namespaces[${i}].templates[${j}].name` })),
    ),
  ];
  for (const { ref, field } of references) {
    if (!state.template(ref.name))
      warnings.push(`${field}: NamespaceTemplate "${ref.name}" does not exist yet`);
  }
  return { violations, warnings };
}

const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Every string in a value with its field path, for placeholder checks. */
function strings(value: unknown, path: string): { path: string; text: string }[] {
  if (typeof value === "string") return [{ path, text: value }];
  if (Array.isArray(value)) return value.flatMap((v, i) => strings(v, `${path}[${i}]`));
  if (value && typeof value === "object") {
    return Object.entries(value).flatMap(([k, v]) =>
      strings(v, /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? `${path}.${k}` : `${path}[${k}]`),
    );
  }
  return [];
}

/** Tells whether a kind is namespaced: true, false, or undefined when the API server does not serve it. */
export type KindScope = (apiVersion: string, kind: string) => Promise<boolean | undefined>;

/** Checks a NamespaceTemplate: objects are namespaced, land in the tenant namespace, use declared parameters. */
export async function templateFindings(
  template: NamespaceTemplate,
  namespaced: KindScope,
): Promise<Findings> {
  const violations = validateNamespaceTemplate(template).map((v) => `${v.field}: ${v.message}`);
  const warnings: string[] = [];
  if (violations.length) return { violations, warnings };
  const parameters = new Set<string>([
    ...BUILTIN_TEMPLATE_PARAMETERS,
    ...(template.spec.parameters ?? []).map((p) => p.name),
  ]);
  const seen = new Map<string, number>();
  for (const [i, object] of template.spec.objects.entries()) {
    const field = `spec.objects[${i}]`;
    const metadata = object.metadata ?? {};
    if (!metadata.name) violations.push(`${field}.metadata.name: required`);
    if (metadata.namespace !== undefined && metadata.namespace !== "${namespace}") {
      violations.push(
        `${field}.metadata.namespace: leave it out: objects are created in each tenant namespace, not "${metadata.namespace}"`,
      );
    }
    for (const key of Object.keys(metadata.labels ?? {})) {
      if (key.startsWith(TENANTRY_LABEL_PREFIX))
        violations.push(
          `${field}.metadata.labels[${key}]: labels under ${TENANTRY_LABEL_PREFIX} are set by tenantry`,
        );
    }
    for (const { path, text } of strings(object, field)) {
      for (const match of text.matchAll(PLACEHOLDER)) {
        if (!parameters.has(match[1]!)) {
          violations.push(
            `${path}: \${${match[1]}} is neither a built-in parameter (tenant, namespace) nor declared in spec.parameters`,
          );
        }
      }
    }
    const group = object.apiVersion.includes("/") ? object.apiVersion.split("/")[0] : "";
    const key = `${group}/${object.kind}/${metadata.name}`;
    const first = seen.get(key);
    if (first !== undefined) {
      violations.push(`${field}: ${object.kind} "${metadata.name}" is already spec.objects[${first}]`);
    } else seen.set(key, i);
    const scope = await namespaced(object.apiVersion, object.kind);
    if (scope === undefined) {
      violations.push(`${field}.kind: the API server serves no kind ${object.kind} in ${object.apiVersion}`);
    } else if (!scope) {
      violations.push(
        `${field}.kind: ${object.kind} is cluster-scoped; a template holds namespaced objects only`,
      );
    }
  }
  return { violations, warnings };
}

/** Checks a TenantResourceQuota: per-namespace quotas fit within hard and name the tenant's namespaces. */
export function quotaFindings(
  quota: TenantResourceQuota,
  state: TenancyState,
  identity: TenantryIdentity,
): Findings {
  const violations = validateTenantResourceQuota(quota).map((v) => `${v.field}: ${v.message}`);
  const warnings: string[] = [];
  if (violations.length) return { violations, warnings };
  const tenantName = quota.spec.tenant;
  const tenant = state.tenant(tenantName);
  if (!tenant) warnings.push(`spec.tenant: tenant "${tenantName}" does not exist yet`);
  if (tenant && quota.spec.user && !(tenant.spec.users ?? []).some((u) => u.name === quota.spec.user)) {
    warnings.push(`spec.user: "${quota.spec.user}" is not in spec.users of tenant "${tenantName}"`);
  }
  const amount = (value: string | number | undefined) => {
    try {
      return value === undefined ? undefined : parseQuantity(value);
    } catch (err) {
      if (err instanceof QuantityError) return undefined;
      throw err;
    }
  };
  const hard = quota.spec.hard as Record<string, string | number>;
  const sums = new Map<string, { total: bigint; count: number }>();
  const reserved = reservedNamespaces(identity);
  (quota.spec.namespaceQuotas ?? []).forEach((nq, i) => {
    const field = `spec.namespaceQuotas[${i}]`;
    if (reserved.has(nq.namespace)) {
      violations.push(
        `${field}.namespace: "${nq.namespace}" is a system namespace, not a namespace of tenant "${tenantName}"`,
      );
    } else {
      const existing = state.namespace(nq.namespace);
      const owner = existing?.metadata?.labels?.[TENANT_LABEL];
      if (owner && owner !== tenantName) {
        violations.push(
          `${field}.namespace: namespace "${nq.namespace}" belongs to tenant "${owner}", not "${tenantName}"`,
        );
      } else if (!owner) {
        warnings.push(
          `${field}.namespace: "${nq.namespace}" is not a namespace of tenant "${tenantName}" yet`,
        );
      }
    }
    for (const [resource, raw] of Object.entries(nq.hard as Record<string, string | number>)) {
      const value = amount(raw);
      const limit = amount(hard[resource]);
      if (value === undefined || limit === undefined) continue;
      if (value > limit) {
        violations.push(
          `${field}.hard[${resource}]: ${raw} is more than spec.hard[${resource}] (${hard[resource]})`,
        );
      }
      const sum = sums.get(resource) ?? { total: 0n, count: 0 };
      sums.set(resource, { total: sum.total + value, count: sum.count + 1 });
    }
  });
  for (const [resource, { total, count }] of sums) {
    const limit = amount(hard[resource])!;
    if (count > 1 && total > limit) {
      const parts = (quota.spec.namespaceQuotas ?? [])
        .filter((nq) => (nq.hard as Record<string, unknown>)[resource] !== undefined)
        .map((nq) => `${nq.namespace}: ${(nq.hard as Record<string, unknown>)[resource]}`);
      violations.push(
        `spec.namespaceQuotas: ${resource} adds up to more than spec.hard[${resource}] (${hard[resource]}) over ${count} namespaces (${parts.join(", ")})`,
      );
    }
  }
  return { violations, warnings };
}

function decision(findings: Findings): AdmissionDecision {
  if (findings.violations.length) return deny(findings.violations.join("; "));
  return findings.warnings.length ? { allowed: true, warnings: findings.warnings } : allow();
}

/** Resolves kinds to their scope through API discovery, refreshing when a kind is not (yet) known. */
export class DiscoveryKindScope {
  private readonly cache = new Map<string, { at: number; kinds: Map<string, boolean> }>();

  constructor(
    private readonly client: ClusterClient,
    private readonly maxAgeMs = 30_000,
  ) {}

  readonly scope: KindScope = async (apiVersion, kind) => {
    let entry = this.cache.get(apiVersion);
    if (
      !entry ||
      (!entry.kinds.has(kind) && Date.now() - entry.at > 1000) ||
      Date.now() - entry.at > this.maxAgeMs
    ) {
      entry = { at: Date.now(), kinds: await this.load(apiVersion) };
      this.cache.set(apiVersion, entry);
    }
    return entry.kinds.get(kind);
  };

  private async load(apiVersion: string): Promise<Map<string, boolean>> {
    const path = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    try {
      const list = (await this.client.objects.getJson(path)) as {
        resources?: { name: string; kind: string; namespaced: boolean }[];
      };
      return new Map(
        (list.resources ?? []).filter((r) => !r.name.includes("/")).map((r) => [r.kind, r.namespaced]),
      );
    } catch (err) {
      if ((err as { code?: number }).code === 404) return new Map();
      throw err;
    }
  }
}

export function tenancyValidationWebhook(context: AdmissionContext): AdmissionCheck {
  const { lookup } = context;
  const { informers } = lookup;
  const discovery = new DiscoveryKindScope(informers.client);
  const state = (): TenancyState => ({
    tenant: (name) => informers.tenants.get(undefined, name),
    quota: (name) => informers.quotas.get(undefined, name),
    namespace: (name) => informers.tenantNamespaces.get(undefined, name),
    template: (name) => informers.templates.get(undefined, name),
    tenantsDeclaring: (namespace) => informers.tenantsDeclaring(namespace),
  });
  return {
    name: "tenancy.tenants.tenantry.dev",
    kind: "validating",
    path: "/validate/tenancy",
    // Fail: a Tenant, template or quota admitted unchecked could claim another tenant's namespace
    // or quota, or carry a regex that makes every pod of the tenant fail admission.
    failurePolicy: "Fail",
    rules: [
      {
        apiGroups: [TENANTRY_GROUP],
        apiVersions: ["*"],
        operations: ["CREATE", "UPDATE"],
        resources: ["tenants", "namespacetemplates", "tenantresourcequotas"],
        scope: "Cluster",
      },
    ],
    async handle(request: AdmissionRequest) {
      if (request.subResource) return allow();
      const object = request.object as { spec?: unknown };
      // Metadata-only updates (such as tenantry's namespace reservations) are not judged again.
      if (
        request.operation === "UPDATE" &&
        isDeepStrictEqual(object.spec, (request.oldObject as { spec?: unknown })?.spec)
      )
        return allow();
      const identity = await context.identity();
      switch (request.resource.resource) {
        case "tenants":
          return decision(tenantFindings(request.object as Tenant, state(), identity));
        case "namespacetemplates":
          return decision(await templateFindings(request.object as NamespaceTemplate, discovery.scope));
        case "tenantresourcequotas":
          return decision(quotaFindings(request.object as TenantResourceQuota, state(), identity));
        default:
          return allow();
      }
    },
  };
}
