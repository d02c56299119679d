import {
  type AdmissionCheck,
  type AdmissionDecision,
  type AdmissionRequest,
  allow,
  deny,
  type JsonPatchOperation,
  NOT_NAMESPACE_BOOTSTRAP,
  pointerSegment,
} from "../../webhooks/index.js";
import type { Tenant } from "../api/tenant.js";
import { IN_TENANT_NAMESPACES, TENANT_LABEL, USER_LABEL } from "../controllers/labels.js";
import type { AdmissionContext, AnyObject, ObjectMetadata } from "./context.js";
import { cordonedMessage } from "./cordoned.js";
import {
  isPrivileged,
  isSystemComponent,
  isTenantry,
  type Requester,
  type TenantryIdentity,
  userLabelValue,
} from "./identity.js";

/**
 * Resources that are never labelled: events (written constantly by the cluster, owned by no one),
 * review requests (not stored) and pod bindings (the scheduler's).
 */
function unlabelled(request: AdmissionRequest): boolean {
  const { group, resource } = request.resource;
  return (
    resource === "events" ||
    resource === "bindings" ||
    group === "authorization.k8s.io" ||
    group === "authentication.k8s.io"
  );
}

/**
 * Where an object keeps the metadata of the pods it creates, as JSON Pointers to the object
 * holding `metadata`: pods a controller creates from a template the user wrote carry the user's
 * labels too.
 */
function podTemplatePaths(request: AdmissionRequest): string[] {
  const { group, resource } = request.resource;
  if (group === "apps" && ["deployments", "replicasets", "statefulsets", "daemonsets"].includes(resource))
    return ["/spec/template"];
  if (group === "batch" && resource === "jobs") return ["/spec/template"];
  if (group === "batch" && resource === "cronjobs")
    return ["/spec/jobTemplate", "/spec/jobTemplate/spec/template"];
  if (group === "" && resource === "replicationcontrollers") return ["/spec/template"];
  if (group === "" && resource === "podtemplates") return ["/template"];
  return [];
}

function at(object: unknown, pointer: string): AnyObject | undefined {
  let current: unknown = object;
  for (const segment of pointer.split("/").slice(1)) {
    if (!current || typeof current !== "object") return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current && typeof current === "object" ? (current as AnyObject) : undefined;
}

/**
 * JSON Patch making the labels `keys` of the metadata under `parent` equal `wanted` (a value of
 * undefined removes the label), creating `metadata` and `labels` when missing.
 */
function labelsPatch(
  holder: AnyObject,
  parent: string,
  wanted: Record<string, string | undefined>,
): JsonPatchOperation[] {
  const metadata: ObjectMetadata | undefined = holder.metadata;
  const toSet = Object.fromEntries(
    Object.entries(wanted).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  if (!metadata)
    return Object.keys(toSet).length
      ? [{ op: "add", path: `${parent}/metadata`, value: { labels: toSet } }]
      : [];
  const current = metadata.labels;
  if (!current)
    return Object.keys(toSet).length ? [{ op: "add", path: `${parent}/metadata/labels`, value: toSet }] : [];
  const ops: JsonPatchOperation[] = [];
  for (const [key, value] of Object.entries(wanted)) {
    const path = `${parent}/metadata/labels/${pointerSegment(key)}`;
    if (current[key] === value) continue;
    if (value === undefined) ops.push({ op: "remove", path });
    else ops.push({ op: key in current ? "replace" : "add", path, value });
  }
  return ops;
}

/** Labels of the tenant and the creator on the object and on the pod templates inside it. */
function stamp(
  object: AnyObject,
  templatePaths: string[],
  labels: Record<string, string | undefined>,
): JsonPatchOperation[] {
  const ops = labelsPatch(object, "", labels);
  for (const path of templatePaths) {
    const template = at(object, path);
    if (template) ops.push(...labelsPatch(template, path, labels));
  }
  return ops;
}

/**
 * New objects in a tenant namespace get the tenant label, and, when a person or a tenant
 * workload creates them, the creator's user label (CloudVeneto CaaS, step 10): every authenticated
 * requester who is not a cluster component counts, owners, spec.users and anyone else RBAC lets
 * in alike, so per-user quota and ownership never depend on a list being complete. A user label
 * the requester wrote is replaced, so nobody can charge their objects to someone else. Cluster
 * components (controllers creating pods from a user's Deployment, say) keep the labels the
 * template carries, which this webhook stamped when the user created the template. Objects
 * tenantry itself creates are left as tenantry wrote them.
 */
export function ownerLabelsOnCreate(
  request: AdmissionRequest,
  tenant: Tenant,
  identity: TenantryIdentity,
): AdmissionDecision {
  const requester: Requester = request.userInfo;
  if (request.subResource || unlabelled(request) || isTenantry(requester, identity)) return allow();
  const object = request.object as AnyObject;
  const tenantName = tenant.metadata!.name!;
  if (isSystemComponent(requester, identity))
    return allow(labelsPatch(object, "", { [TENANT_LABEL]: tenantName }));
  if (tenant.spec.cordoned && !isPrivileged(requester, identity)) {
    return deny(cordonedMessage(tenantName));
  }
  return allow(
    stamp(object, podTemplatePaths(request), {
      [TENANT_LABEL]: tenantName,
      [USER_LABEL]: userLabelValue(requester.username ?? ""),
    }),
  );
}

/**
 * Updates by anyone but the cluster's components and tenantry keep the tenant and user labels
 * as they were (on the object and its pod templates): relabelling cannot move an object to
 * another user. Restored silently, because `kubectl apply` of a manifest that never had these
 * labels would otherwise fail.
 */
export function ownerLabelsOnUpdate(
  request: AdmissionRequest,
  identity: TenantryIdentity,
): AdmissionDecision {
  const requester: Requester = request.userInfo;
  if (
    request.subResource ||
    unlabelled(request) ||
    isTenantry(requester, identity) ||
    isSystemComponent(requester, identity)
  )
    return allow();
  const before = request.oldObject as AnyObject;
  const after = request.object as AnyObject;
  const keep = (holder: AnyObject | undefined) => ({
    [TENANT_LABEL]: holder?.metadata?.labels?.[TENANT_LABEL],
    [USER_LABEL]: holder?.metadata?.labels?.[USER_LABEL],
  });
  const ops = labelsPatch(after, "", keep(before));
  for (const path of podTemplatePaths(request)) {
    const template = at(after, path);
    if (template) ops.push(...labelsPatch(template, path, keep(at(before, path))));
  }
  return allow(ops);
}

const everyResource = (operations: string[]) => ({
  apiGroups: ["*"],
  apiVersions: ["*"],
  operations,
  resources: ["*"],
  scope: "Namespaced",
});

export function ownerLabelWebhooks(context: AdmissionContext): AdmissionCheck[] {
  const { lookup } = context;
  return [
    {
      name: "owner-labels.tenants.tenantry.dev",
      kind: "mutating",
      path: "/mutate/owner-labels",
      // Fail: per-user quotas count objects by their user label and user-level authorization
      // decides by it, so an object admitted unlabelled would escape both.
      failurePolicy: "Fail",
      namespaceSelector: IN_TENANT_NAMESPACES,
      matchConditions: [NOT_NAMESPACE_BOOTSTRAP],
      rules: [everyResource(["CREATE"])],
      async handle(request) {
        if (request.subResource || unlabelled(request) || !request.namespace) return allow();
        const tenant = await lookup.tenantOfNamespace(request.namespace);
        return tenant ? ownerLabelsOnCreate(request, tenant, await context.identity()) : allow();
      },
    },
    {
      name: "owner-labels-kept.tenants.tenantry.dev",
      kind: "mutating",
      path: "/mutate/owner-labels-kept",
      // Fail, like the labels themselves. Only objects that carry (or are given) a user label are
      // sent here, so the frequent updates of objects nobody owns never wait on tenantry.
      failurePolicy: "Fail",
      namespaceSelector: IN_TENANT_NAMESPACES,
      objectSelector: { matchExpressions: [{ key: USER_LABEL, operator: "Exists" }] },
      rules: [everyResource(["UPDATE"])],
      handle: async (request) => ownerLabelsOnUpdate(request, await context.identity()),
    },
  ];
}
