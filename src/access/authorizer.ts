import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { Counter, type Registry } from "prom-client";
import { type ClusterClient, Informer, isNotFound, silentLogger } from "../kube/index.js";
import type { WorkerNode } from "../nodes/index.js";
import {
  isClusterAdmin,
  type Requester,
  RUNTIME_USER_ANNOTATION,
  TENANTS_API_VERSION,
  type Tenant,
  type TenantInformers,
  type TenantRole,
  tenantRole,
  USER_LABEL,
  userLabelValue,
} from "../tenants/index.js";
import type { AccessGrant, GrantRule } from "./api/access-grant.js";
import { RuntimeNamespaceAccess } from "./runtime-namespaces.js";
import type { SelectorAttributes } from "./selectors.js";
import { isWorkerNodeKind, WorkerNodeAccess, type WorkerNodeOwnership } from "./worker-nodes.js";

/** authorization.k8s.io/v1 SubjectAccessReview, as kube-apiserver sends it to a webhook. */
export interface SubjectAccessReviewSpec {
  user?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
  resourceAttributes?: {
    namespace?: string;
    verb?: string;
    group?: string;
    version?: string;
    resource?: string;
    subresource?: string;
    name?: string;
    labelSelector?: SelectorAttributes;
    fieldSelector?: SelectorAttributes;
  };
  nonResourceAttributes?: { path?: string; verb?: string };
}

export interface AuthorizationDecision {
  /** `allow`: tenantry allows (a grant); `deny`: tenantry refuses and nothing after it is asked; `none`: RBAC decides. */
  decision: "allow" | "deny" | "none";
  reason: string;
}

const CHANGING_VERBS = new Set(["update", "patch", "delete"]);
/** Subresources that act on a running workload as much as a change does. */
const ACTING_SUBRESOURCES = new Set(["exec", "attach", "portforward", "eviction", "proxy"]);

export interface AuthorizerOptions {
  client: ClusterClient;
  informers: TenantInformers;
  /** Usernames that are tenantry or other cluster components acting for everyone. */
  isSystem(requester: Requester): boolean;
  /** The nodes capability's cache of WorkerNodes (who owns which). */
  workerNodes?: Pick<Informer<WorkerNode>, "get">;
  logger?: Logger;
  registry?: Registry;
}

/** Index of AccessGrants by namespace: a request is matched only against its namespace's grants. */
const GRANTS_BY_NAMESPACE = "namespace";

/**
 * tenantry's authorization webhook (CloudVeneto CaaS, step 8; Arktos cross-tenant access). It sits
 * after the Node authorizer and before RBAC, and decides from caches:
 * - inside a tenant, a member changes only objects carrying their user label; owners change all;
 * - a user's runtimes namespace is theirs: others get what an AccessGrant there names, the
 *   tenant's owners what its spec.runtimeAccess says, its other members nothing
 *   (`runtime-namespaces.ts`);
 * - outside their own tenants, an AccessGrant of the namespace may allow exactly what it names;
 * - tenant users' WorkerNodes and NodeProviders (cluster-scoped): only their own nodes, in tenants
 *   that may have some (`worker-nodes.ts`);
 * - everything else gets "no opinion", so RBAC decides as it always does.
 */
export class Authorizer {
  readonly grants: Informer<AccessGrant>;
  private readonly logger: Logger;
  private readonly decisions?: Counter<"decision" | "reason">;
  private readonly workerNodeAccess: WorkerNodeAccess;
  private readonly runtimeAccess: RuntimeNamespaceAccess;

  constructor(private readonly options: AuthorizerOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "authorizer" });
    this.workerNodeAccess = new WorkerNodeAccess({ workerNode: (name) => this.workerNodeOwnership(name) });
    this.runtimeAccess = new RuntimeNamespaceAccess({ core: options.client.core, logger: this.logger });
    this.grants = Informer.forResource<AccessGrant>(options.client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "AccessGrant",
    });
    this.grants.addIndex(GRANTS_BY_NAMESPACE, (grant) => [grant.metadata?.namespace ?? ""]);
    if (options.registry) {
      this.decisions = new Counter({
        name: "tenantry_authorization_decisions_total",
        help: "SubjectAccessReviews answered, by decision and why.",
        labelNames: ["decision", "reason"],
        registers: [options.registry],
      });
    }
  }

  async start(): Promise<void> {
    this.grants.start();
    await this.grants.waitForSync({ timeoutMs: 60_000 });
  }

  async stop(): Promise<void> {
    await this.grants.stop();
  }

  async review(spec: SubjectAccessReviewSpec): Promise<AuthorizationDecision> {
    const { decision, kind } = await this.decide(spec);
    this.decisions?.inc({ decision: decision.decision, reason: kind });
    if (decision.decision !== "none") {
      const attrs = spec.resourceAttributes ?? {};
      this.logger.info(
        {
          user: spec.user,
          verb: attrs.verb,
          resource: [attrs.group, attrs.resource, attrs.subresource].filter(Boolean).join("/"),
          namespace: attrs.namespace,
          name: attrs.name,
          decision: decision.decision,
          reason: decision.reason,
        },
        "authorization decision",
      );
    }
    return decision;
  }

  private async decide(
    spec: SubjectAccessReviewSpec,
  ): Promise<{ decision: AuthorizationDecision; kind: string }> {
    const none = (kind: string, reason = "") => ({ decision: { decision: "none" as const, reason }, kind });
    const attrs = spec.resourceAttributes;
    const requester: Requester = { username: spec.user ?? "", groups: spec.groups ?? [] };
    if (isClusterAdmin(requester) || this.options.isSystem(requester)) return none("system");
    if (!attrs?.namespace) {
      if (!attrs || !isWorkerNodeKind(attrs)) return none("not-namespaced");
      const tenants = this.options.informers.membershipsOf(requester);
      if (tenants.length === 0) return none("outside-tenant");
      const decision = await this.workerNodeAccess.decide(attrs, { requester, tenants });
      return decision ? { decision, kind: "worker-nodes" } : none("worker-nodes");
    }
    const tenant = this.options.informers.tenantOfNamespace(attrs.namespace);
    if (!tenant) return none("not-a-tenant-namespace");
    const tenantName = tenant.metadata!.name!;
    const role = tenantRole(tenant, requester);
    const runtimeUser = this.options.informers.tenantNamespaces.get(undefined, attrs.namespace)?.metadata
      ?.annotations?.[RUNTIME_USER_ANNOTATION];
    if (runtimeUser !== undefined && runtimeUser !== requester.username) {
      return this.inRuntimeNamespace(attrs, requester, tenant, runtimeUser, role);
    }
    if (runtimeUser !== undefined) return none("runtime-user");
    if (role === "owner") return none("tenant-owner");
    if (role === "member") return this.memberDecision(attrs, requester, tenantName);
    return this.granted(attrs, requester, tenantName) ?? none("outside-tenant");
  }

  /** Inside their tenant, a member changes (and acts on) only the objects labelled with their user. */
  private async memberDecision(
    attrs: NonNullable<SubjectAccessReviewSpec["resourceAttributes"]>,
    requester: Requester,
    tenantName: string,
  ): Promise<{ decision: AuthorizationDecision; kind: string }> {
    if (attrs.verb === "deletecollection") {
      return {
        decision: {
          decision: "deny",
          reason: `only owners of tenant "${tenantName}" may delete collections: members delete their own objects one by one`,
        },
        kind: "not-own-object",
      };
    }
    const acting = attrs.subresource ? ACTING_SUBRESOURCES.has(attrs.subresource) : false;
    if (attrs.name && (CHANGING_VERBS.has(attrs.verb ?? "") || acting)) {
      const target = await this.creatorOf(attrs);
      const mine = userLabelValue(requester.username ?? "");
      if (target.exists && target.creator !== mine) {
        const what = `${attrs.resource}${attrs.subresource ? `/${attrs.subresource}` : ""} "${attrs.name}"`;
        // An object nobody is labelled as creator of (the default ServiceAccount, what
        // controllers make) belongs to the tenant's owners, not to every member.
        const whose = target.creator ? `user "${target.creator}"` : `the owners of tenant "${tenantName}"`;
        return {
          decision: {
            decision: "deny",
            reason: `${what} in namespace "${attrs.namespace}" belongs to ${whose}: members of tenant "${tenantName}" may ${attrs.verb} only their own objects (its owners may ${attrs.verb} any)`,
          },
          kind: "not-own-object",
        };
      }
    }
    return { decision: { decision: "none", reason: "" }, kind: "tenant-member" };
  }

  /** An AccessGrant of the namespace that allows the request, as a decision. */
  private granted(
    attrs: NonNullable<SubjectAccessReviewSpec["resourceAttributes"]>,
    requester: Requester,
    tenantName: string,
  ): { decision: AuthorizationDecision; kind: string } | undefined {
    const grant = this.matchingGrant(attrs, requester);
    if (!grant) return undefined;
    return {
      decision: {
        decision: "allow",
        reason: `allowed by AccessGrant ${attrs.namespace}/${grant.metadata!.name} of tenant "${tenantName}"`,
      },
      kind: "grant",
    };
  }

  /** Someone other than its user in a user's runtimes namespace: a grant, else the tenant's rule. */
  private inRuntimeNamespace(
    attrs: NonNullable<SubjectAccessReviewSpec["resourceAttributes"]>,
    requester: Requester,
    tenant: Tenant,
    runtimeUser: string,
    role: TenantRole | undefined,
  ): { decision: AuthorizationDecision; kind: string } {
    const granted = this.granted(attrs, requester, tenant.metadata!.name!);
    if (granted) return granted;
    const ruled = this.runtimeAccess.decide(
      { ...attrs, namespace: attrs.namespace! },
      requester,
      tenant,
      runtimeUser,
      role,
    );
    if (!ruled) return { decision: { decision: "none", reason: "" }, kind: "outside-tenant" };
    return { decision: { decision: ruled.decision, reason: ruled.reason }, kind: ruled.kind };
  }

  /**
   * Who a WorkerNode belongs to: from the nodes capability's cache, else (created a moment ago, or
   * none by that name) read once from the API server.
   */
  private async workerNodeOwnership(name: string): Promise<WorkerNodeOwnership | undefined> {
    let node = this.options.workerNodes?.get(undefined, name);
    if (!node) {
      try {
        node = (await this.options.client.objects.getJson(
          `/apis/${TENANTS_API_VERSION}/workernodes/${encodeURIComponent(name)}`,
        )) as WorkerNode;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    }
    return {
      ...(node.spec?.owner ? { owner: node.spec.owner } : {}),
      ...(node.spec?.tenant ? { tenant: node.spec.tenant } : {}),
    };
  }

  /** Whether the object the request targets exists, and its user label if it has one. */
  private async creatorOf(
    attrs: NonNullable<SubjectAccessReviewSpec["resourceAttributes"]>,
  ): Promise<{ exists: boolean; creator?: string }> {
    const version = attrs.version || "v1";
    const base = attrs.group ? `/apis/${attrs.group}/${version}` : `/api/${version}`;
    const path = `${base}/namespaces/${encodeURIComponent(attrs.namespace!)}/${attrs.resource}/${encodeURIComponent(attrs.name!)}`;
    try {
      // resourceVersion=0: served from kube-apiserver's watch cache; the creator label never changes.
      const object = (await this.options.client.objects.getJson(path, {
        resourceVersion: "0",
      })) as KubernetesObject;
      const creator = object.metadata?.labels?.[USER_LABEL];
      return creator === undefined ? { exists: true } : { exists: true, creator };
    } catch (err) {
      if (isNotFound(err)) return { exists: false };
      throw err;
    }
  }

  private matchingGrant(
    attrs: NonNullable<SubjectAccessReviewSpec["resourceAttributes"]>,
    requester: Requester,
  ): AccessGrant | undefined {
    const now = Date.now();
    const inTenant = (name: string) => {
      const tenant = this.options.informers.tenants.get(undefined, name);
      return tenant !== undefined && tenantRole(tenant, requester) !== undefined;
    };
    return this.grants.byIndex(GRANTS_BY_NAMESPACE, attrs.namespace ?? "").find((grant) => {
      if (grant.spec.expiresAt && Date.parse(grant.spec.expiresAt) <= now) return false;
      const granted = grant.spec.grantees.some((g) => {
        switch (g.kind) {
          case "User":
            return g.name === requester.username;
          case "Group":
            return requester.groups?.includes(g.name) ?? false;
          case "Tenant":
            return inTenant(g.name);
        }
        return false;
      });
      return granted && grant.spec.rules.some((rule) => ruleMatches(rule, attrs));
    });
  }
}

export function ruleMatches(
  rule: GrantRule,
  attrs: NonNullable<SubjectAccessReviewSpec["resourceAttributes"]>,
): boolean {
  const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : (attrs.resource ?? "");
  if (!rule.apiGroups.includes(attrs.group ?? "")) return false;
  if (!rule.resources.includes(resource)) return false;
  if (!(rule.verbs as string[]).includes(attrs.verb ?? "")) return false;
  if (rule.resourceNames?.length) return attrs.name !== undefined && rule.resourceNames.includes(attrs.name);
  return true;
}

/** Lets tenant owners (bound to `admin` in their namespaces) manage AccessGrants, and viewers read them. */
export const accessGrantClusterRoles: KubernetesObject[] = [
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: {
      name: "tenantry:accessgrants:admin",
      labels: {
        "app.kubernetes.io/managed-by": "tenantry",
        "rbac.authorization.k8s.io/aggregate-to-admin": "true",
      },
    },
    rules: [
      {
        apiGroups: ["tenantry.dev"],
        resources: ["accessgrants"],
        verbs: ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"],
      },
    ],
  } as KubernetesObject,
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: {
      name: "tenantry:accessgrants:view",
      labels: {
        "app.kubernetes.io/managed-by": "tenantry",
        "rbac.authorization.k8s.io/aggregate-to-view": "true",
        "rbac.authorization.k8s.io/aggregate-to-edit": "true",
      },
    },
    rules: [{ apiGroups: ["tenantry.dev"], resources: ["accessgrants"], verbs: ["get", "list", "watch"] }],
  } as KubernetesObject,
];
