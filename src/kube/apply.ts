import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { type KubernetesObject, PatchStrategy } from "@kubernetes/client-node";
import type { ClusterClient } from "./clients.js";
import { ignoreNotFound } from "./errors.js";

/**
 * The single server-side apply field manager of tenantry. Using one name everywhere means
 * the API server sees one owner for every field tenantry writes, so a later apply that
 * omits a field removes it instead of leaving a stale copy owned by another manager.
 */
export const FIELD_MANAGER = "tenantry";

export interface ApplyOptions {
  /**
   * Take over fields currently owned by other managers instead of failing with 409.
   * Default true: Kubernetes recommends that controllers always force, since they cannot
   * resolve such conflicts interactively.
   */
  force?: boolean;
  /** Validate and return the result without persisting it. */
  dryRun?: boolean;
}

/** Builds the object to send: apply requests must not carry managedFields. */
function applyBody<T extends KubernetesObject>(obj: T): T {
  if (!obj.apiVersion || !obj.kind) throw new Error("server-side apply needs apiVersion and kind");
  if (!obj.metadata?.name) throw new Error(`server-side apply of ${obj.kind} needs metadata.name`);
  const { managedFields: _managedFields, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

/**
 * Server-side applies `obj` (the fields tenantry wants to own) with {@link FIELD_MANAGER}.
 * Applying the same object again is a no-op on the server: no new resourceVersion, no
 * watch event. Returns the object as stored.
 */
export async function applyObject<T extends KubernetesObject>(
  client: ClusterClient,
  obj: T,
  options: ApplyOptions = {},
): Promise<T> {
  return client.objects.patchRaw(applyBody(obj), PatchStrategy.ServerSideApply, {
    fieldManager: FIELD_MANAGER,
    force: options.force ?? true,
    ...(options.dryRun ? { dryRun: true } : {}),
  });
}

/**
 * Server-side applies the status subresource. `obj` needs apiVersion, kind, metadata.name
 * (and namespace) and the `status` fields to own; anything else in it is ignored by the
 * server. client-node's object API cannot address subresources, hence the dedicated call.
 */
export async function applyStatus<T extends KubernetesObject & { status?: unknown }>(
  client: ClusterClient,
  obj: T,
  options: ApplyOptions = {},
): Promise<T> {
  const body = applyBody(obj);
  const { name, namespace } = body.metadata ?? {};
  const statusOnly = {
    apiVersion: body.apiVersion,
    kind: body.kind,
    metadata: namespace ? { name, namespace } : { name },
    status: body.status,
  } as unknown as T;
  return client.objects.patchSubresource(statusOnly, "status", PatchStrategy.ServerSideApply, {
    fieldManager: FIELD_MANAGER,
    force: options.force ?? true,
    ...(options.dryRun ? { dryRun: true } : {}),
  });
}

/**
 * A controller's status write: applies the status subresource as {@link applyStatus} does, and
 * resolves to undefined when the object is gone (404) — deleted since the cache saw it, so there is
 * no status left to write and its delete event reaches the controller anyway. Every other failure
 * throws. A conflict (409) cannot come back: the apply is forced and carries no resourceVersion.
 */
export async function applyStatusUnlessGone<T extends KubernetesObject & { status?: unknown }>(
  client: ClusterClient,
  obj: T,
  options: ApplyOptions = {},
): Promise<T | undefined> {
  return ignoreNotFound(applyStatus(client, obj, options));
}

/**
 * Annotation holding a digest of what tenantry last applied to an object. Comparing fields alone
 * cannot tell that the desired object dropped a field (the stored one still has it); the digest can.
 */
export const APPLIED_DIGEST_ANNOTATION = "tenantry.dev/applied-digest";

/** JSON with object keys sorted, so equal objects give equal text whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** `desired` with its digest annotation; metadata.resourceVersion (a precondition, not content) is left out of the digest. */
export function withAppliedDigest<T extends KubernetesObject>(desired: T): T {
  const { resourceVersion: _resourceVersion, ...metadata } = desired.metadata ?? {};
  const { [APPLIED_DIGEST_ANNOTATION]: _previous, ...annotations } = metadata.annotations ?? {};
  const content = { ...desired, metadata: { ...metadata, annotations } };
  const digest = createHash("sha256").update(canonicalJson(content)).digest("base64url").slice(0, 22);
  return {
    ...desired,
    metadata: { ...desired.metadata, annotations: { ...annotations, [APPLIED_DIGEST_ANNOTATION]: digest } },
  };
}

/**
 * Whether two values are the same once stored: compared as JSON, so fields left undefined count
 * as absent. For deciding that a status write would change nothing.
 */
export function sameStoredJson(a: unknown, b: unknown): boolean {
  const stored = (v: unknown) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));
  return isDeepStrictEqual(stored(a), stored(b));
}

/**
 * Whether `current` holds every field of `desired` with the same value (objects may carry more
 * fields, such as server defaults; lists must match item by item).
 */
export function holdsFields(current: unknown, desired: unknown): boolean {
  if (Array.isArray(desired)) {
    return (
      Array.isArray(current) &&
      current.length === desired.length &&
      desired.every((item, i) => holdsFields(current[i], item))
    );
  }
  if (desired && typeof desired === "object") {
    if (!current || typeof current !== "object" || Array.isArray(current)) return false;
    return Object.entries(desired as Record<string, unknown>).every(
      ([key, value]) => value === undefined || holdsFields((current as Record<string, unknown>)[key], value),
    );
  }
  return current === desired;
}

/**
 * Whether applying `stamped` (from {@link withAppliedDigest}) to the object now stored as `current`
 * would change nothing: same digest (nothing was added to or removed from what tenantry wants) and
 * every wanted field still in place (nobody else changed it since).
 */
export function isApplied(current: KubernetesObject | undefined, stamped: KubernetesObject): boolean {
  if (!current) return false;
  const digest = stamped.metadata?.annotations?.[APPLIED_DIGEST_ANNOTATION];
  if (!digest || current.metadata?.annotations?.[APPLIED_DIGEST_ANNOTATION] !== digest) return false;
  const { resourceVersion: _resourceVersion, ...metadata } = stamped.metadata ?? {};
  return holdsFields(current, { ...stamped, metadata });
}

/**
 * Server-side applies `desired` unless `current` (usually from an informer's cache) already holds
 * it. Saves the request, not just the write, so a controller that looks at many unchanged objects
 * costs the API server nothing. Returns whether a request was sent.
 */
export async function applyIfChanged(
  client: ClusterClient,
  desired: KubernetesObject,
  current: KubernetesObject | undefined,
  options: ApplyOptions = {},
): Promise<boolean> {
  const stamped = withAppliedDigest(desired);
  if (isApplied(current, stamped)) return false;
  await applyObject(client, stamped, options);
  return true;
}
