import {
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type V1LabelSelector,
  type V1LabelSelectorRequirement,
} from "@kubernetes/client-node";
import type { AdmissionWebhook } from "./server.js";

/**
 * Namespaces no tenantry webhook ever intercepts, so that an outage of tenantry never blocks the
 * cluster's own components or tenantry's own recovery.
 */
export const EXEMPT_NAMESPACES = ["kube-system", "kube-public", "kube-node-lease"];

/**
 * What kube-controller-manager puts into every new namespace before anything can run there: the
 * `default` ServiceAccount (pods are refused without it) and the `kube-root-ca.crt` ConfigMap. A
 * webhook that may fail must not be in their way: while it is down, the controllers back off (up to
 * about 17 minutes), and the namespace stays unusable long after the webhook is back. Their labels
 * and their share of a quota are left to controllers that count from the objects themselves.
 */
export const NOT_NAMESPACE_BOOTSTRAP = {
  name: "not-namespace-bootstrap",
  expression:
    "!((request.userInfo.username == 'system:kube-controller-manager' || request.userInfo.username.startsWith('system:serviceaccount:kube-system:')) && request.resource.group == '' && (request.resource.resource == 'serviceaccounts' || (request.resource.resource == 'configmaps' && has(request.name) && request.name == 'kube-root-ca.crt')))",
};

export interface WebhookEndpoint {
  /** Base URL the API server calls (embedded default: loopback). */
  url?: string;
  /** In-cluster Service in front of the webhook server. */
  service?: { namespace: string; name: string; port?: number };
  caPem: string;
}

function withExemptions(selector: V1LabelSelector | undefined, exempt: string[]): V1LabelSelector {
  const requirement: V1LabelSelectorRequirement = {
    key: "kubernetes.io/metadata.name",
    operator: "NotIn",
    values: exempt,
  };
  return { ...selector, matchExpressions: [...(selector?.matchExpressions ?? []), requirement] };
}

/** The Mutating- and ValidatingWebhookConfiguration for a set of webhooks, with the CA bundle. */
export function webhookConfigurations(
  configurationName: string,
  webhooks: AdmissionWebhook[],
  endpoint: WebhookEndpoint,
  ownNamespace: string,
): KubernetesObject[] {
  const caBundle = Buffer.from(endpoint.caPem).toString("base64");
  const exempt = [...EXEMPT_NAMESPACES, ownNamespace];
  const entry = (w: AdmissionWebhook) => ({
    name: w.name,
    admissionReviewVersions: ["v1"],
    sideEffects: w.sideEffects ?? "None",
    failurePolicy: w.failurePolicy,
    matchPolicy: "Equivalent",
    timeoutSeconds: w.timeoutSeconds ?? 5,
    rules: w.rules,
    namespaceSelector: withExemptions(w.namespaceSelector, exempt),
    ...(w.objectSelector ? { objectSelector: w.objectSelector } : {}),
    ...(w.matchConditions?.length ? { matchConditions: w.matchConditions } : {}),
    ...(w.kind === "mutating" ? { reinvocationPolicy: "IfNeeded" } : {}),
    clientConfig: endpoint.url
      ? { url: `${endpoint.url}${w.path}`, caBundle }
      : { service: { ...endpoint.service, path: w.path }, caBundle },
  });
  const objects: KubernetesObject[] = [];
  for (const kind of ["mutating", "validating"] as const) {
    const selected = webhooks.filter((w) => w.kind === kind);
    if (selected.length === 0) continue;
    objects.push({
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: kind === "mutating" ? "MutatingWebhookConfiguration" : "ValidatingWebhookConfiguration",
      metadata: { name: configurationName, labels: { "app.kubernetes.io/managed-by": "tenantry" } },
      webhooks: selected.map(entry),
    } as KubernetesObject);
  }
  return objects;
}

export async function applyWebhookConfigurations(kc: KubeConfig, objects: KubernetesObject[]): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  for (const object of objects) {
    await api.patch(object, undefined, undefined, "tenantry", true, PatchStrategy.ServerSideApply);
  }
}

export async function deleteWebhookConfigurations(
  kc: KubeConfig,
  objects: KubernetesObject[],
): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  for (const object of objects) {
    await api.delete(object).catch((err) => {
      if ((err as { code?: number }).code !== 404) throw err;
    });
  }
}
