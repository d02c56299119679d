import { AuthorizationV1Api, type V1ResourceAttributes } from "@kubernetes/client-node";
import { LRUCache } from "lru-cache";
import { callerTenants } from "../gateway/index.js";
import type { KubernetesUser } from "../identity/index.js";
import type { ClusterClient } from "../kube/index.js";
import type { Tenant, TenantInformers } from "../tenants/index.js";

export type ResourceAttributes = Pick<
  V1ResourceAttributes,
  "verb" | "group" | "resource" | "namespace" | "name"
>;

/**
 * Asks the API server what a person may do (SubjectAccessReview as them: RBAC and tenantry's
 * authorization webhook answer, as for their own requests). Answers are kept briefly per person
 * and question, so a page asks once per resource kind, not once per object.
 */
export class AccessReviewer {
  private readonly api: AuthorizationV1Api;
  private readonly answers: LRUCache<string, Promise<boolean>>;

  constructor(client: ClusterClient, options: { ttlMs?: number } = {}) {
    this.api = client.kubeConfig.makeApiClient(AuthorizationV1Api);
    this.answers = new LRUCache({ max: 50_000, ttl: options.ttlMs ?? 10_000 });
  }

  allowed(user: KubernetesUser, attributes: ResourceAttributes): Promise<boolean> {
    const key = JSON.stringify([user.username, user.groups, attributes]);
    let answer = this.answers.get(key);
    if (!answer) {
      answer = this.api
        .createSubjectAccessReview({
          body: {
            apiVersion: "authorization.k8s.io/v1",
            kind: "SubjectAccessReview",
            spec: {
              user: user.username,
              uid: user.uid,
              groups: user.groups,
              extra: user.extra,
              resourceAttributes: attributes,
            },
          },
        })
        .then((review) => review.status?.allowed === true);
      // A failed review is asked again next time rather than remembered.
      answer.catch(() => this.answers.delete(key));
      this.answers.set(key, answer);
    }
    return answer;
  }

  /** May list Tenants cluster-wide: sees every tenant (an operator). */
  seesAllTenants(user: KubernetesUser): Promise<boolean> {
    return this.allowed(user, { verb: "list", group: "tenantry.dev", resource: "tenants" });
  }
}

/** The tenants a person sees besides an operator's all: the tenant gateway's own rule. */
export function memberTenants(informers: TenantInformers, user: KubernetesUser, vouched?: string): Tenant[] {
  return callerTenants(informers, {
    username: user.username,
    groups: user.groups,
    ...(vouched ? { tenant: vouched } : {}),
  });
}
