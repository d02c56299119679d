/**
 * Who calls the logical-clouds API and what they may do. Callers prove who they are as they do to
 * kube-apiserver: a client certificate signed by the registry cluster's client CA (as in DCM's
 * `curl --cert --key`), a token of tenantry's identity providers, or any token the cluster
 * accepts (TokenReview). Kubernetes RBAC on that cluster decides, through a SubjectAccessReview,
 * on the CRDs: projects (cluster-wide) and logical clouds in the project's namespace.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { TLSSocket } from "node:tls";
import { AuthorizationV1Api } from "@kubernetes/client-node";
import { LRUCache } from "lru-cache";
import { type Caller, CallerAuthenticator } from "../../gateway/index.js";
import type { Authenticator, Identity } from "../../identity/index.js";
import type { ClusterClient } from "../../kube/index.js";
import { TENANTRY_GROUP } from "../../tenants/index.js";

export interface Permission {
  verb: string;
  resource: "projects" | "logicalclouds" | "clusters";
  subresource?: string;
  namespace?: string;
  name?: string;
}

const CACHE_MS = 5_000;
const CACHE_SIZE = 10_000;

export class CloudCallers {
  private readonly authn: CallerAuthenticator;
  private readonly authz: AuthorizationV1Api;
  private readonly decisions = new LRUCache<string, { allowed: boolean; reason: string }>({
    max: CACHE_SIZE,
    ttl: CACHE_MS,
  });

  constructor(
    client: ClusterClient,
    authenticator?: Authenticator,
    onAuthenticated?: (identity: Identity) => Promise<void>,
  ) {
    this.authn = new CallerAuthenticator(client, authenticator, onAuthenticated);
    this.authz = client.kubeConfig.makeApiClient(AuthorizationV1Api);
  }

  authenticate(socket: TLSSocket, headers: IncomingHttpHeaders) {
    return this.authn.authenticate(socket, headers);
  }

  /** Whether the cluster's authorizers let `caller` do `permission` (cached for a few seconds). */
  async allowed(caller: Caller, permission: Permission): Promise<{ allowed: boolean; reason: string }> {
    const key = JSON.stringify([caller.username, caller.groups, permission]);
    const cached = this.decisions.get(key);
    if (cached) return cached;
    const review = await this.authz.createSubjectAccessReview({
      body: {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: {
          user: caller.username,
          groups: caller.groups,
          ...(caller.uid ? { uid: caller.uid } : {}),
          extra: caller.extra,
          resourceAttributes: {
            group: TENANTRY_GROUP,
            resource: permission.resource,
            verb: permission.verb,
            ...(permission.subresource ? { subresource: permission.subresource } : {}),
            ...(permission.namespace ? { namespace: permission.namespace } : {}),
            ...(permission.name ? { name: permission.name } : {}),
          },
        },
      },
    });
    const decision = {
      allowed: review.status?.allowed === true,
      reason: review.status?.reason ?? review.status?.evaluationError ?? "",
    };
    this.decisions.set(key, decision);
    return decision;
  }
}

export function describePermission(p: Permission): string {
  const what = `${p.resource}${p.subresource ? `/${p.subresource}` : ""}.${TENANTRY_GROUP}`;
  return `${p.verb} ${what}${p.name ? ` "${p.name}"` : ""}${p.namespace ? ` in namespace ${p.namespace}` : ""}`;
}
