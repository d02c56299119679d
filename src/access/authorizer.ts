import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { Counter, type Registry } from "prom-client";
import { type ClusterClient, Informer, isNotFound, silentLogger } from "../kube/index.js";
import {
  isClusterAdmin,
  type Requester,
  TENANTS_API_VERSION,
  type TenantInformers,
  tenantRole,
  USER_LABEL,
  userLabelValue,
} from "../tenants/index.js";
import type { AccessGrant, GrantRule } from "./api/access-grant.js";

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
  logger?: Logger;
  registry?: Registry;
}

/**
 * tenantry's authorization webhook (document 001, step 8; Arktos cross-tenant access). It sits
 * after the Node authorizer and before RBAC:
 * - inside a tenant, a member changes only objects carrying their user label; owners change all;
 * - outside their own tenants, an AccessGrant of the namespace may allow exactly what it names;
 * - everything else gets "no opinion", so RBAC decides as it always does.
 */
/** Index of AccessGrants by namespace: a request is matched only against its namespace's grants. */
const GRANTS_BY_NAMESPACE = "namespace";

export class Authorizer {
  readonly grants: Informer<AccessGrant>;
  private readonly logger: Logger;
  private readonly decisions?: Counter<"decision" | "reason">;

  constructor(private readonly options: AuthorizerOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "authorizer" });
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
    if (!attrs?.namespace) return none("not-namespaced");
    if (isClusterAdmin(requester) || this.options.isSystem(requester)) return none("system");
    const tenant = this.options.informers.tenantOfNamespace(attrs.namespace);
    if (!tenant) return none("not-a-tenant-namespace");
    const tenantName = tenant.metadata!.name!;
    const role = tenantRole(tenant, requester);
    if (role === "owner") return none("tenant-owner");
    if (role === "member") {
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
      return none("tenant-member");
    }
    const grant = this.matchingGrant(attrs, requester);
    if (grant) {
      return {
        decision: {
          decision: "allow",
          reason: `allowed by AccessGrant ${attrs.namespace}/${grant.metadata!.name} of tenant "${tenantName}"`,
        },
        kind: "grant",
      };
    }
    return none("outside-tenant");
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
