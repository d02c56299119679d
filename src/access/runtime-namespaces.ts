/**
 * A user's runtimes namespace (the runtimes capability's Segregated mode, marked with the
 * `tenantry.dev/runtime-user` annotation) is that user's, whatever RBAC anyone was given there:
 *
 * - its user: as in any namespace of theirs (RBAC decides; they administer it);
 * - anyone an AccessGrant there names: exactly what the grant says;
 * - the tenant's owners: what `spec.runtimeAccess.owners` says — None: nothing but the namespace
 *   itself (to delete it); View (default): reads of what runs there, but no Secrets, ConfigMaps or
 *   logs, no exec, attach, port-forward or proxy, no changes; Full: everything, each such use
 *   recorded as an Event in the namespace and an audit line;
 * - the tenant's other members: nothing.
 */

import type { CoreV1Api } from "@kubernetes/client-node";
import { LRUCache } from "lru-cache";
import type { Logger } from "pino";
import { recordEvent } from "../kube/index.js";
import type { Requester, Tenant, TenantRole } from "../tenants/index.js";
import { runtimeOwnerAccess } from "../tenants/index.js";

const READ_VERBS = new Set(["get", "list", "watch"]);
/** What holds a runtime's credentials, or reaches into it. */
const PRIVATE_RESOURCES = new Set(["secrets", "configmaps"]);
const PRIVATE_SUBRESOURCES = new Set(["log", "exec", "attach", "portforward", "proxy"]);
/** The same owner doing the same thing in one namespace is recorded once per this many ms. */
const RECORD_EVERY_MS = 60_000;

export interface RuntimeRequest {
  namespace: string;
  verb?: string;
  group?: string;
  resource?: string;
  subresource?: string;
  name?: string;
}

export type RuntimeNamespaceDecision =
  | { decision: "allow" | "deny" | "none"; reason: string; kind: string }
  | undefined;

export interface RuntimeNamespaceAccessOptions {
  /** Records an owner's use of Full access as an Event (absent: the audit line only). */
  core?: CoreV1Api;
  logger: Logger;
}

/** Whether a request reads a runtime's contents or credentials, reaches into it, or changes anything. */
export function isPrivate(attrs: RuntimeRequest): boolean {
  return (
    !READ_VERBS.has(attrs.verb ?? "") ||
    PRIVATE_RESOURCES.has(attrs.resource ?? "") ||
    PRIVATE_SUBRESOURCES.has(attrs.subresource ?? "")
  );
}

function describe(attrs: RuntimeRequest): string {
  const resource = [attrs.resource, attrs.subresource].filter(Boolean).join("/");
  return `${attrs.verb} ${resource}${attrs.group ? `.${attrs.group}` : ""}${attrs.name ? ` "${attrs.name}"` : ""}`;
}

export class RuntimeNamespaceAccess {
  private readonly recorded = new LRUCache<string, true>({ max: 10_000, ttl: RECORD_EVERY_MS });

  constructor(private readonly options: RuntimeNamespaceAccessOptions) {}

  /**
   * The decision in `user`'s runtimes namespace for someone else with `role` in its tenant, whom no
   * AccessGrant there lets in. Undefined for those outside the tenant: RBAC's call, as anywhere.
   */
  decide(
    attrs: RuntimeRequest,
    requester: Requester,
    tenant: Tenant,
    user: string,
    role: TenantRole | undefined,
  ): RuntimeNamespaceDecision {
    const where = `namespace "${attrs.namespace}" is the runtimes namespace of user "${user}"`;
    if (role === "member") {
      return {
        decision: "deny",
        reason: `${where}: other members of tenant "${tenant.metadata!.name}" get nothing there unless "${user}" lets them in with an AccessGrant`,
        kind: "runtime-namespace",
      };
    }
    if (role === "owner") return this.ownerDecision(attrs, requester, tenant, user, where);
    return undefined;
  }

  private ownerDecision(
    attrs: RuntimeRequest,
    requester: Requester,
    tenant: Tenant,
    user: string,
    where: string,
  ): RuntimeNamespaceDecision {
    // The namespace itself: its owners may always read and delete it (RBAC says which).
    if (attrs.resource === "namespaces" && !attrs.group)
      return { decision: "none", reason: "", kind: "tenant-owner" };
    const access = runtimeOwnerAccess(tenant);
    const policy = `spec.runtimeAccess.owners of tenant "${tenant.metadata!.name}" is ${access}`;
    if (access === "None" || (access === "View" && isPrivate(attrs))) {
      const allowed =
        access === "None"
          ? "get nothing there"
          : "see what runs there, but not its Secrets, ConfigMaps or logs, and may not exec, attach, port-forward, proxy or change anything";
      return {
        decision: "deny",
        reason: `${where}: ${policy}: its owners ${allowed} (${describe(attrs)} refused)`,
        kind: "runtime-owner-policy",
      };
    }
    if (access === "Full" && isPrivate(attrs)) this.record(attrs, requester, user, policy);
    return { decision: "none", reason: "", kind: "tenant-owner" };
  }

  /** An owner's use of Full access: an audit line each time, an Event per minute per owner and action. */
  private record(attrs: RuntimeRequest, requester: Requester, user: string, policy: string): void {
    const what = describe(attrs);
    this.options.logger.info(
      { owner: requester.username, namespace: attrs.namespace, runtimeUser: user, request: what },
      "tenant owner used Full access to a user's runtimes namespace",
    );
    const key = `${requester.username}\u0000${attrs.namespace}\u0000${what}`;
    if (!this.options.core || this.recorded.has(key)) return;
    this.recorded.set(key, true);
    void recordEvent(
      this.options.core,
      { apiVersion: "v1", kind: "Namespace", name: attrs.namespace, namespace: attrs.namespace },
      {
        type: "Normal",
        reason: "OwnerAccess",
        message: `tenant owner "${requester.username}" was allowed ${what} in the runtimes namespace of "${user}" (${policy})`,
        component: "tenantry-authorizer",
      },
      this.options.logger,
    );
  }
}
