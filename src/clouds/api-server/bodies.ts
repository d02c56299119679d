/**
 * DCM bodies ↔ the CRDs' parts. Every body is checked field by field here (a FieldError names the
 * field, answered as 400); older DCM spellings (`user-name`, `cluster-provider`, `cluster-name`)
 * are read too.
 */
import type { V1LabelSelector } from "@kubernetes/client-node";
import {
  type ClusterQuota,
  type ClusterReference,
  type KvPair,
  type LogicalCloud,
  type LogicalCloudSpec,
  type LogicalCloudUser,
  MAX_LOGICAL_CLOUD_NAME,
  type UserPermission,
} from "../api/logical-cloud.js";
import { MAX_PROJECT_NAME, type Project, type ProjectSpec } from "../api/project.js";
import {
  checkLabels,
  checkPermission,
  checkQuota,
  checkSelector,
  checkUser,
  FieldError,
} from "../validation.js";
import type { Metadata } from "./schemas.js";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

type Body = Record<string, unknown> | undefined;

function objectAt(value: unknown, field: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value))
    throw new FieldError(field, "must be an object", 422);
  return value as Record<string, unknown>;
}

function stringAt(value: unknown, field: string, max: number): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new FieldError(field, `must be a string`, 422);
  if (value.length > max)
    throw new FieldError(field, `is ${value.length} characters long; at most ${max}`, 400, max);
  return value;
}

/** A body must be present and carry metadata.name. */
export function nameOf(
  body: Body,
  kind: string,
  max: number,
  pattern: "label" | "subdomain" = "label",
): string {
  if (!body || Object.keys(body).length === 0)
    throw new FieldError("body", `a ${kind} needs a body with metadata.name`);
  const metadata = objectAt(body.metadata, "metadata");
  const name = metadata.name;
  if (name === undefined || name === "") throw new FieldError("metadata.name", `a ${kind} needs a name`);
  if (typeof name !== "string") throw new FieldError("metadata.name", "must be a string", 422);
  const re = pattern === "label" ? DNS_LABEL : DNS_SUBDOMAIN;
  if (!re.test(name) || name.length > max) {
    throw new FieldError(
      "metadata.name",
      `"${name}" must be ${pattern === "label" ? "a DNS label" : "a DNS subdomain"} of at most ${max} characters (lowercase letters, digits, "-"${pattern === "label" ? "" : ', "."'})`,
      400,
      max,
    );
  }
  return name;
}

function metadataText(body: Body) {
  const metadata = objectAt(body?.metadata, "metadata");
  return {
    description: stringAt(metadata.description, "metadata.description", 1024),
    userData1: stringAt(metadata.userData1, "metadata.userData1", 512),
    userData2: stringAt(metadata.userData2, "metadata.userData2", 512),
  };
}

function defined<T extends Record<string, unknown>>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

// ---------------------------------------------------------------------------------------------
// Projects

export function projectFromBody(body: Body): { name: string; spec: ProjectSpec } {
  const name = nameOf(body, "project", MAX_PROJECT_NAME);
  const spec = objectAt(body?.spec, "spec");
  const admins = spec.admins;
  if (admins !== undefined && !Array.isArray(admins))
    throw new FieldError("spec.admins", "must be a list", 422);
  const checkedAdmins = (admins ?? []).map((a: unknown, i: number) => {
    const admin = objectAt(a, `spec.admins[${i}]`);
    if (admin.kind !== "User" && admin.kind !== "Group")
      throw new FieldError(
        `spec.admins[${i}].kind`,
        `must be User or Group, not ${JSON.stringify(admin.kind)}`,
      );
    const adminName = stringAt(admin.name, `spec.admins[${i}].name`, 256);
    if (!adminName) throw new FieldError(`spec.admins[${i}].name`, "is required");
    return { kind: admin.kind as "User" | "Group", name: adminName };
  });
  return {
    name,
    spec: defined({ ...metadataText(body), admins: checkedAdmins.length ? checkedAdmins : undefined }),
  };
}

export function projectToBody(project: Project): Record<string, unknown> {
  const { description, userData1, userData2, admins } = project.spec;
  return {
    metadata: defined({ name: project.metadata!.name!, description, userData1, userData2 }),
    spec: admins?.length ? { admins } : {},
  };
}

// ---------------------------------------------------------------------------------------------
// Logical clouds

function userFromBody(value: unknown, field: string): LogicalCloudUser & { raw: Record<string, unknown> } {
  const user = objectAt(value, field);
  const userName = user.userName ?? user["user-name"];
  return defined({
    userName: userName as string,
    type: user.type as "certificate" | undefined,
    certificateRequest: user.certificateRequest as string | undefined,
    raw: user,
  }) as LogicalCloudUser & { raw: Record<string, unknown> };
}

export type CloudParts = Pick<
  LogicalCloudSpec,
  "description" | "userData1" | "userData2" | "level" | "namespace" | "labels" | "user" | "users"
>;

export async function cloudFromBody(body: Body): Promise<{ name: string; spec: CloudParts }> {
  const name = nameOf(body, "logical cloud", MAX_LOGICAL_CLOUD_NAME, "subdomain");
  const spec = objectAt(body?.spec, "spec");
  const rawLevel = spec.level ?? "1";
  const level = String(rawLevel);
  if (level !== "0" && level !== "1")
    throw new FieldError("spec.level", `${JSON.stringify(rawLevel)} must be "0" (admin) or "1" (standard)`);
  const parts: CloudParts = { ...defined(metadataText(body)), level };
  if (level === "0") return { name, spec: parts };
  const namespace = stringAt(spec.namespace, "spec.namespace", 63);
  if (!namespace)
    throw new FieldError(
      "spec.namespace",
      "a level-1 logical cloud needs the namespace to make on every cluster",
    );
  if (!DNS_LABEL.test(namespace))
    throw new FieldError(
      "spec.namespace",
      `"${namespace}" must be a DNS label (lowercase letters, digits, "-")`,
    );
  parts.namespace = namespace;
  const labels = objectAt(spec.labels, "spec.labels");
  checkLabels(labels, "spec.labels");
  if (Object.keys(labels).length) parts.labels = labels as Record<string, string>;
  if (spec.user === undefined)
    throw new FieldError("spec.user", "a level-1 logical cloud needs a user (userName)");
  const users: LogicalCloudUser[] = [];
  const { raw, ...user } = userFromBody(spec.user, "spec.user");
  await checkUser({ ...raw, ...user }, "spec.user", name);
  parts.user = user;
  users.push(user);
  if (spec.users !== undefined) {
    if (!Array.isArray(spec.users)) throw new FieldError("spec.users", "must be a list", 422);
    parts.users = [];
    for (const [i, value] of spec.users.entries()) {
      const { raw: rawMore, ...more } = userFromBody(value, `spec.users[${i}]`);
      await checkUser({ ...rawMore, ...more }, `spec.users[${i}]`, name);
      if (users.some((u) => u.userName === more.userName)) {
        throw new FieldError(`spec.users[${i}].userName`, `"${more.userName}" is named twice`);
      }
      users.push(more);
      parts.users.push(more);
    }
  }
  return { name, spec: parts };
}

export function cloudToBody(cloud: LogicalCloud): Record<string, unknown> {
  const { description, userData1, userData2, level, namespace, labels, user, users } = cloud.spec;
  return {
    metadata: defined({ name: cloud.metadata!.name!, description, userData1, userData2 }),
    spec: defined({ namespace, level: level ?? "1", labels, user, users }),
  };
}

// ---------------------------------------------------------------------------------------------
// Sub-resources

export function referenceFromBody(body: Body): ClusterReference {
  const name = nameOf(body, "cluster reference", 63);
  const spec = objectAt(body?.spec, "spec");
  const cluster = stringAt(spec.cluster ?? spec["cluster-name"], "spec.cluster", 63);
  const clusterProvider = stringAt(
    spec.clusterProvider ?? spec["cluster-provider"],
    "spec.clusterProvider",
    63,
  );
  const selector =
    spec.clusterSelector === undefined ? undefined : objectAt(spec.clusterSelector, "spec.clusterSelector");
  if (!cluster && !selector)
    throw new FieldError(
      "spec.cluster",
      "name a registered cluster (or, tenantry's addition, a spec.clusterSelector)",
    );
  if (cluster && selector)
    throw new FieldError(
      "spec.clusterSelector",
      "name either spec.cluster or spec.clusterSelector, not both",
    );
  if (cluster && !DNS_LABEL.test(cluster))
    throw new FieldError("spec.cluster", `"${cluster}" is not a cluster name (a DNS label)`);
  if (clusterProvider && !DNS_LABEL.test(clusterProvider))
    throw new FieldError("spec.clusterProvider", `"${clusterProvider}" is not a provider name (a DNS label)`);
  if (selector) checkSelector(selector as V1LabelSelector, "spec.clusterSelector");
  return defined({
    name,
    cluster,
    clusterProvider,
    clusterSelector: selector as ClusterReference["clusterSelector"],
  }) as ClusterReference;
}

export function referenceToBody(ref: ClusterReference): Record<string, unknown> {
  return {
    metadata: { name: ref.name },
    spec: defined({
      clusterProvider: ref.clusterProvider,
      cluster: ref.cluster,
      clusterSelector: ref.clusterSelector,
    }),
  };
}

export function permissionFromBody(body: Body): UserPermission {
  const name = nameOf(body, "user permission", 63);
  const spec = objectAt(body?.spec, "spec");
  const namespace = stringAt(spec.namespace, "spec.namespace", 63);
  if (namespace && !DNS_LABEL.test(namespace))
    throw new FieldError("spec.namespace", `"${namespace}" is not a namespace name`);
  checkPermission(spec, "spec");
  const users = spec.users;
  if (users !== undefined && (!Array.isArray(users) || users.some((u) => typeof u !== "string"))) {
    throw new FieldError("spec.users", "must be a list of user names", 422);
  }
  return defined({
    name,
    namespace: namespace || undefined,
    apiGroups: spec.apiGroups as string[],
    resources: spec.resources as string[],
    verbs: spec.verbs as string[],
    users: users as string[] | undefined,
  }) as UserPermission;
}

export function permissionToBody(p: UserPermission): Record<string, unknown> {
  return {
    metadata: { name: p.name },
    spec: defined({
      namespace: p.namespace ?? "",
      apiGroups: p.apiGroups,
      resources: p.resources,
      verbs: p.verbs,
      users: p.users,
    }),
  };
}

export function quotaFromBody(body: Body): ClusterQuota {
  const name = nameOf(body, "cluster quota", 63);
  return { name, hard: checkQuota(objectAt(body?.spec, "spec"), "spec") };
}

export function quotaToBody(q: ClusterQuota): Record<string, unknown> {
  return {
    metadata: { name: q.name },
    spec: Object.fromEntries(Object.entries(q.hard).map(([k, v]) => [k, String(v)])),
  };
}

export function kvFromBody(body: Body): KvPair {
  const name = nameOf(body, "kv pair", 63);
  const spec = objectAt(body?.spec, "spec");
  const kv = spec.kv ?? [];
  if (!Array.isArray(kv)) throw new FieldError("spec.kv", "must be a list of {key: value} objects", 422);
  kv.forEach((entry, i) => {
    const object = objectAt(entry, `spec.kv[${i}]`);
    for (const [k, v] of Object.entries(object)) {
      if (typeof v !== "string") throw new FieldError(`spec.kv[${i}].${k}`, "must be a string", 422);
    }
  });
  return { name, kv: kv as Record<string, string>[] };
}

export function kvToBody(kv: KvPair): Record<string, unknown> {
  return { metadata: { name: kv.name }, spec: { kv: kv.kv } };
}

export type { Metadata };
