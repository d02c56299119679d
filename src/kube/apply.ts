import { type KubernetesObject, PatchStrategy } from "@kubernetes/client-node";
import type { ClusterClient } from "./clients.js";

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
