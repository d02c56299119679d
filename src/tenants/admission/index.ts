import { AuthenticationV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { AdmissionCheck } from "../../webhooks/index.js";
import type { TenantInformers } from "../informers.js";
import { classWebhook } from "./classes.js";
import type { AdmissionContext } from "./context.js";
import { cordonedWebhook } from "./cordoned.js";
import { type TenantryIdentity, tenantryIdentity } from "./identity.js";
import { IngressHostClaims } from "./ingress-hosts.js";
import { TenantLookup } from "./lookup.js";
import { managedObjectsWebhook } from "./managed-objects.js";
import { NamespaceQuota } from "./namespace-quota.js";
import { namespaceWebhooks } from "./namespaces.js";
import { ownerLabelWebhooks } from "./owner-labels.js";
import { podWebhooks } from "./pods.js";
import { reservedNodesWebhook } from "./reserved-nodes.js";
import { serviceWebhook } from "./services.js";
import { tenancyValidationWebhook } from "./tenancy-validation.js";

export { userLabelValue } from "./identity.js";
export { NAMESPACE_RESERVATIONS_ANNOTATION } from "./namespace-quota.js";
export { RUNTIMES_NODE_TAINT_KEY } from "./reserved-nodes.js";

export interface TenantWebhookOptions {
  /**
   * The username tenantry's controllers authenticate as: the only identity, besides cluster
   * administrators (and the garbage collector for cascades), that may change what tenantry
   * manages. Default: whoever the informers' client authenticates as (the controllers share that
   * client), asked of the API server once.
   */
  controllerUsername?: string;
  /** tenantry's own namespace, exempt like the cluster's system namespaces. */
  ownNamespace: string;
}

/** Every admission webhook of the tenants capability, quota aside (see quota/admission.ts). */
export function tenantWebhooks(informers: TenantInformers, options: TenantWebhookOptions): AdmissionCheck[] {
  let identity: Promise<TenantryIdentity> | undefined;
  const resolveIdentity = (): Promise<TenantryIdentity> => {
    identity ??= (
      options.controllerUsername
        ? Promise.resolve(options.controllerUsername)
        : authenticatedUsername(informers.client.kubeConfig)
    ).then(
      (username) => tenantryIdentity(username, options.ownNamespace),
      (err: unknown) => {
        // Asked again at the next request; until then the webhooks' failurePolicy applies.
        identity = undefined;
        throw err;
      },
    );
    return identity;
  };
  // Started now, so the first admission request does not wait for it.
  resolveIdentity().catch(() => {});
  const context: AdmissionContext = {
    lookup: new TenantLookup(informers),
    identity: resolveIdentity,
    namespaceQuota: new NamespaceQuota({ informers }),
    ingressHosts: new IngressHostClaims(informers),
  };
  return [
    ...namespaceWebhooks(context),
    ...ownerLabelWebhooks(context),
    ...podWebhooks(context),
    reservedNodesWebhook(context),
    classWebhook(context),
    serviceWebhook(context),
    managedObjectsWebhook(context),
    tenancyValidationWebhook(context),
    cordonedWebhook(context),
  ];
}

/**
 * Who the API server takes a kubeconfig's credentials for (SelfSubjectReview), whatever they are:
 * a client certificate, a token, an exec plugin.
 */
export async function authenticatedUsername(kubeConfig: KubeConfig): Promise<string> {
  const review = await kubeConfig.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
    body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
  });
  const username = review.status?.userInfo?.username;
  if (!username) throw new Error("the API server did not say who tenantry authenticates as");
  return username;
}
