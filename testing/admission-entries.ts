/**
 * Which of tenantry's registered webhook entries kube-apiserver would call for a tenant user's
 * request: rules, namespace and object selectors, and match conditions, read from the cluster's
 * configurations. The one-call test counts them; bench:tenants calls exactly them.
 */
import {
  AdmissionregistrationV1Api,
  type KubeConfig,
  type V1MutatingWebhook,
  type V1ValidatingWebhook,
} from "@kubernetes/client-node";
import { labelsMatch, ruleMatches } from "../src/webhooks/dispatcher.js";
import type { AdmissionRequest } from "../src/webhooks/index.js";

export type WebhookEntry = V1MutatingWebhook | V1ValidatingWebhook;

/**
 * What each of tenantry's match conditions says of an ordinary tenant user creating a plain pod (no
 * nodeName, no tolerations). CEL is kube-apiserver's to evaluate; a condition not listed here is an
 * error, so a new one must say what it does for such a pod.
 */
export const CONDITIONS_FOR_A_TENANT_USERS_POD: Readonly<Record<string, boolean>> = {
  "not-privileged-requester": true,
  "privileged-requester": false,
  "not-namespace-bootstrap": true,
  "not-a-cluster-component": true,
  "not-a-cluster-administrator": true,
  "from-a-node": false,
  "may-reach-private-nodes": false,
  "bootstrap-token-requests": false,
};

/** Whether kube-apiserver calls `entry` for `request` in a namespace labelled `namespaceLabels`. */
export function entryMatches(
  entry: WebhookEntry,
  request: AdmissionRequest,
  namespaceLabels: Record<string, string>,
  conditions: Readonly<Record<string, boolean>> = CONDITIONS_FOR_A_TENANT_USERS_POD,
): boolean {
  if (!(entry.rules ?? []).some((rule) => ruleMatches(rule, request))) return false;
  if (!labelsMatch(entry.namespaceSelector ?? {}, namespaceLabels)) return false;
  const objectLabels = (request.object as { metadata?: { labels?: Record<string, string> } } | undefined)
    ?.metadata?.labels;
  if (!labelsMatch(entry.objectSelector ?? {}, objectLabels ?? {})) return false;
  return (entry.matchConditions ?? []).every((c) => {
    const value = conditions[c.name];
    if (value === undefined)
      throw new Error(`match condition ${c.name} of ${entry.name} (${c.expression}): say what it does`);
    return value;
  });
}

/** The entries of every configuration tenantry registered that kube-apiserver would call for `request`. */
export async function entriesCalledFor(
  kubeConfig: KubeConfig,
  request: AdmissionRequest,
  namespaceLabels: Record<string, string>,
): Promise<{ mutating: WebhookEntry[]; validating: WebhookEntry[]; registered: number }> {
  const api = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const selector = { labelSelector: "app.kubernetes.io/managed-by=tenantry" };
  const mutating = (await api.listMutatingWebhookConfiguration(selector)).items.flatMap(
    (c) => c.webhooks ?? [],
  );
  const validating = (await api.listValidatingWebhookConfiguration(selector)).items.flatMap(
    (c) => c.webhooks ?? [],
  );
  const called = (entries: WebhookEntry[]) =>
    entries.filter((e) => entryMatches(e, request, namespaceLabels));
  return {
    mutating: called(mutating),
    validating: called(validating),
    registered: mutating.length + validating.length,
  };
}

/** A tenant user's plain pod CREATE in `namespace`, as kube-apiserver would send it. */
export function podCreateRequest(namespace: string, username: string): AdmissionRequest {
  return {
    uid: "count",
    kind: { group: "", version: "v1", kind: "Pod" },
    resource: { group: "", version: "v1", resource: "pods" },
    namespace,
    operation: "CREATE",
    userInfo: { username, groups: ["system:authenticated"] },
    object: { metadata: { name: "p" }, spec: { containers: [{ name: "c", image: "nginx" }] } },
  };
}
