/**
 * What a logical cloud's parts must be, checked before anything is stored: every refusal names
 * the field and says what is allowed (the REST API answers it as a 400).
 */
import type { V1LabelSelector } from "@kubernetes/client-node";
import { LABEL_KEY_PATTERN, LABEL_VALUE_PATTERN } from "../apis/index.js";
import { parseQuantity, UserError } from "../common/index.js";
import { checkUserCertificateRequest } from "../identity/index.js";
import { USER_NAME_PATTERN } from "./api/logical-cloud.js";

/** A refusal of one field of a request. */
export class FieldError extends Error {
  constructor(
    readonly field: string,
    message: string,
    readonly status = 400,
    readonly limit?: string | number,
  ) {
    super(`${field}: ${message}`);
    this.name = "FieldError";
  }
}

/** Verbs RBAC knows for resources; `*` is all of them. */
export const PERMISSION_VERBS = [
  "get",
  "list",
  "watch",
  "create",
  "update",
  "patch",
  "delete",
  "deletecollection",
  "bind",
  "escalate",
  "impersonate",
  "use",
  "approve",
  "sign",
  "proxy",
  "*",
] as const;

/** ResourceQuota keys as DCM documents them, and what ResourceQuota accepts besides. */
export const QUOTA_KEYS = [
  "cpu",
  "memory",
  "limits.cpu",
  "limits.memory",
  "requests.cpu",
  "requests.memory",
  "requests.storage",
  "requests.ephemeral-storage",
  "limits.ephemeral-storage",
  "ephemeral-storage",
  "persistentvolumeclaims",
  "pods",
  "configmaps",
  "secrets",
  "services",
  "services.loadbalancers",
  "services.nodeports",
  "replicationcontrollers",
  "resourcequotas",
] as const;
const QUOTA_KEY_PATTERNS = [
  /^count\/[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, // count/deployments.apps
  /^(requests\.|limits\.)?hugepages-[0-9]+[KMGT]i$/,
  /^requests\.[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/, // requests.example.com/gpu
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\.storageclass\.storage\.k8s\.io\/(requests\.storage|persistentvolumeclaims)$/,
];

/**
 * The quota a level-1 logical cloud's namespace gets on every cluster when it names none
 * (ICN logical cloud: "the default quota for memory, CPU and Kubernetes resources").
 */
export const DEFAULT_QUOTA: Readonly<Record<string, string>> = {
  "requests.cpu": "4",
  "limits.cpu": "8",
  "requests.memory": "8Gi",
  "limits.memory": "16Gi",
  "requests.storage": "100Gi",
  persistentvolumeclaims: "20",
  pods: "50",
  services: "20",
  "services.loadbalancers": "0",
  "services.nodeports": "0",
  configmaps: "50",
  secrets: "50",
  "count/deployments.apps": "30",
  "count/statefulsets.apps": "10",
  "count/jobs.batch": "30",
  "count/cronjobs.batch": "10",
};
export const DEFAULT_QUOTA_NAME = "tenantry-default";
/** Container defaults in the namespace, so pods that set no requests or limits fit a CPU or memory quota. */
export const DEFAULT_CONTAINER_REQUESTS: Readonly<Record<string, string>> = { cpu: "100m", memory: "128Mi" };
export const DEFAULT_CONTAINER_LIMITS: Readonly<Record<string, string>> = { cpu: "500m", memory: "512Mi" };

export function quotaKeyAllowed(key: string): boolean {
  return (QUOTA_KEYS as readonly string[]).includes(key) || QUOTA_KEY_PATTERNS.some((p) => p.test(key));
}

/** A flat map of ResourceQuota keys to quantities. */
export function checkQuota(hard: Record<string, unknown>, field: string): Record<string, string> {
  const entries = Object.entries(hard);
  if (entries.length === 0) throw new FieldError(field, "names no resource (e.g. limits.cpu, pods)");
  if (entries.length > 64)
    throw new FieldError(field, `names ${entries.length} resources; at most 64`, 400, 64);
  const checked: Record<string, string> = {};
  for (const [key, value] of entries) {
    if (!quotaKeyAllowed(key)) {
      throw new FieldError(
        `${field}.${key}`,
        `"${key}" is not a ResourceQuota resource; use one of ${QUOTA_KEYS.join(", ")}, count/<resource>.<group>, requests.<domain>/<name> or hugepages-<size>`,
      );
    }
    if (typeof value !== "string" && typeof value !== "number") {
      throw new FieldError(
        `${field}.${key}`,
        `must be a quantity such as "4", "500m" or "8Gi", not ${JSON.stringify(value)}`,
      );
    }
    let amount: bigint;
    try {
      amount = parseQuantity(value);
    } catch {
      throw new FieldError(
        `${field}.${key}`,
        `"${value}" is not a quantity (e.g. "4", "500m", "8Gi", "1e3")`,
      );
    }
    if (amount < 0n) throw new FieldError(`${field}.${key}`, `"${value}" is negative`);
    checked[key] = String(value);
  }
  return checked;
}

function checkList(values: unknown, field: string, what: string): string[] {
  if (!Array.isArray(values) || values.length === 0)
    throw new FieldError(field, `must list at least one ${what}`);
  return values.map((v, i) => {
    if (typeof v !== "string") throw new FieldError(`${field}[${i}]`, `must be a string`);
    return v;
  });
}

export function checkPermission(
  permission: { apiGroups?: unknown; resources?: unknown; verbs?: unknown },
  field: string,
): void {
  checkList(permission.apiGroups, `${field}.apiGroups`, 'API group ("" for the core group)');
  const resources = checkList(permission.resources, `${field}.resources`, "resource");
  resources.forEach((r, i) => {
    if (!r || /\s/.test(r)) throw new FieldError(`${field}.resources[${i}]`, `"${r}" is not a resource name`);
  });
  const verbs = checkList(permission.verbs, `${field}.verbs`, "verb");
  verbs.forEach((verb, i) => {
    if (!(PERMISSION_VERBS as readonly string[]).includes(verb)) {
      throw new FieldError(
        `${field}.verbs[${i}]`,
        `"${verb}" is not a verb; use ${PERMISSION_VERBS.join(", ")}`,
      );
    }
  });
}

const USER_NAME = new RegExp(USER_NAME_PATTERN);

/** A user's name and, when given, their own certificate request: CN their name, O at most the cloud's name. */
export async function checkUser(
  user: { userName?: unknown; type?: unknown; certificateRequest?: unknown },
  field: string,
  cloud: string,
): Promise<void> {
  const name = user.userName;
  if (typeof name !== "string" || !USER_NAME.test(name) || name.length > 63) {
    throw new FieldError(
      `${field}.userName`,
      `${JSON.stringify(name)} must be 1 to 63 letters, digits, "-", "_" or "." (it becomes a certificate CN and an RBAC subject)`,
    );
  }
  if (user.type !== undefined && user.type !== "certificate") {
    throw new FieldError(`${field}.type`, `"${String(user.type)}" is not supported; only "certificate"`);
  }
  if (user.certificateRequest !== undefined) {
    if (typeof user.certificateRequest !== "string")
      throw new FieldError(`${field}.certificateRequest`, "must be a PEM string");
    try {
      await checkUserCertificateRequest(user.certificateRequest, name, { allowedGroups: [cloud] });
    } catch (err) {
      if (err instanceof UserError) throw new FieldError(`${field}.certificateRequest`, err.message);
      throw err;
    }
  }
}

const LABEL_KEY = new RegExp(LABEL_KEY_PATTERN);
const LABEL_VALUE = new RegExp(LABEL_VALUE_PATTERN);

function checkLabelKey(key: string, field: string): void {
  const name = key.includes("/") ? key.slice(key.indexOf("/") + 1) : key;
  if (!LABEL_KEY.test(key) || name.length > 63 || key.length > 317) {
    throw new FieldError(
      field,
      `"${key}" is not a label key (an optional DNS-subdomain prefix and "/", then at most 63 characters)`,
    );
  }
}

function checkLabelValue(value: unknown, field: string): void {
  if (typeof value !== "string" || !LABEL_VALUE.test(value) || value.length > 63) {
    throw new FieldError(
      field,
      `${JSON.stringify(value)} is not a label value (at most 63 letters, digits, "-", "_", ".")`,
    );
  }
}

export function checkLabels(labels: Record<string, unknown>, field: string): void {
  for (const [key, value] of Object.entries(labels)) {
    checkLabelKey(key, `${field}.${key}`);
    checkLabelValue(value, `${field}.${key}`);
  }
}

export function checkSelector(selector: V1LabelSelector, field: string): void {
  const matchLabels = selector.matchLabels ?? {};
  const expressions = selector.matchExpressions ?? [];
  if (Object.keys(matchLabels).length === 0 && expressions.length === 0) {
    throw new FieldError(field, "selects every cluster: give matchLabels or matchExpressions");
  }
  checkLabels(matchLabels, `${field}.matchLabels`);
  expressions.forEach((r, i) => {
    const at = `${field}.matchExpressions[${i}]`;
    checkLabelKey(r.key, `${at}.key`);
    const values = r.values ?? [];
    if (r.operator === "In" || r.operator === "NotIn") {
      if (values.length === 0) throw new FieldError(`${at}.values`, `must not be empty for ${r.operator}`);
    } else if (r.operator === "Exists" || r.operator === "DoesNotExist") {
      if (values.length > 0) throw new FieldError(`${at}.values`, `must be empty for ${r.operator}`);
    } else {
      throw new FieldError(`${at}.operator`, `"${r.operator}" is not In, NotIn, Exists or DoesNotExist`);
    }
    for (const [j, v] of values.entries()) checkLabelValue(v, `${at}.values[${j}]`);
  });
}
