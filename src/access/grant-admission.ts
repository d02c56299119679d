/**
 * Admission of AccessGrants: nobody hands out what they do not hold. As RBAC's escalation rule
 * does for Roles, the author of a grant must be allowed every verb on every resource (and named
 * object) the grant allows, asked of the API server with SubjectAccessReviews in the namespace.
 */
import { AuthorizationV1Api, type KubeConfig, type V1SubjectAccessReview } from "@kubernetes/client-node";
import { isClusterAdmin } from "../tenants/index.js";
import { type AdmissionCheck, type AdmissionRequest, allow, deny } from "../webhooks/index.js";
import type { AccessGrant } from "./api/access-grant.js";

/** SubjectAccessReviews asked at once for one grant (a grant may name up to 16 rules). */
const REVIEW_CONCURRENCY = 16;

export interface GrantPermission {
  /** Where the permission sits in the grant, for the error. */
  field: string;
  group: string;
  resource: string;
  subresource?: string;
  verb: string;
  name?: string;
}

/** Every single permission a grant hands out. */
export function grantPermissions(grant: Pick<AccessGrant, "spec">): GrantPermission[] {
  const permissions: GrantPermission[] = [];
  grant.spec.rules.forEach((rule, i) => {
    for (const group of rule.apiGroups) {
      for (const full of rule.resources) {
        const [resource, subresource] = full.split("/", 2) as [string, string | undefined];
        for (const verb of rule.verbs) {
          const names = rule.resourceNames?.length ? rule.resourceNames : [undefined];
          for (const name of names) {
            permissions.push({
              field: `spec.rules[${i}]`,
              group,
              resource,
              ...(subresource ? { subresource } : {}),
              verb,
              ...(name ? { name } : {}),
            });
          }
        }
      }
    }
  });
  return permissions;
}

export function describePermission(p: GrantPermission): string {
  const resource = `${p.resource}${p.subresource ? `/${p.subresource}` : ""}`;
  const group = p.group ? `.${p.group}` : "";
  return `${p.verb} ${resource}${group}${p.name ? ` "${p.name}"` : ""}`;
}

export function accessGrantWebhook(kubeConfig: KubeConfig): AdmissionCheck {
  const authorization = kubeConfig.makeApiClient(AuthorizationV1Api);
  const allowed = async (request: AdmissionRequest, p: GrantPermission): Promise<boolean> => {
    const { username, uid, groups, extra } = request.userInfo;
    const review: V1SubjectAccessReview = {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: {
        ...(username ? { user: username } : {}),
        ...(uid ? { uid } : {}),
        ...(groups ? { groups } : {}),
        ...(extra ? { extra } : {}),
        resourceAttributes: {
          namespace: request.namespace,
          group: p.group,
          resource: p.resource,
          ...(p.subresource ? { subresource: p.subresource } : {}),
          verb: p.verb,
          ...(p.name ? { name: p.name } : {}),
        },
      },
    };
    const answer = await authorization.createSubjectAccessReview({ body: review });
    return answer.status?.allowed === true;
  };
  return {
    name: "accessgrants.access.tenantry.dev",
    kind: "validating",
    path: "/validate/accessgrants",
    // Fail: a grant admitted unchecked could hand out more than its author holds.
    failurePolicy: "Fail",
    timeoutSeconds: 10,
    rules: [
      {
        apiGroups: ["tenantry.dev"],
        apiVersions: ["*"],
        operations: ["CREATE", "UPDATE"],
        resources: ["accessgrants"],
        scope: "Namespaced",
      },
    ],
    async handle(request) {
      const grant = request.object as unknown as AccessGrant | undefined;
      if (!grant?.spec?.rules || isClusterAdmin(request.userInfo)) return allow();
      const permissions = grantPermissions(grant);
      for (let start = 0; start < permissions.length; start += REVIEW_CONCURRENCY) {
        const batch = permissions.slice(start, start + REVIEW_CONCURRENCY);
        const answers = await Promise.all(batch.map((p) => allowed(request, p)));
        const missing = batch.find((_, i) => !answers[i]);
        if (missing) {
          return deny(
            `${missing.field}: you may not grant "${describePermission(missing)}" in namespace "${request.namespace}": you do not hold it yourself`,
          );
        }
      }
      return allow();
    },
  };
}
