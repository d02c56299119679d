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

/** The name of tenantry's Mutating- and ValidatingWebhookConfiguration. */
export const WEBHOOK_CONFIGURATION = "tenantry";

/** Users of kube-apiserver, kube-controller-manager and kube-scheduler themselves. */
const CONTROL_PLANE_USERS = ["system:apiserver", "system:kube-controller-manager", "system:kube-scheduler"];

/**
 * Who a tenantry outage must never block: cluster administrators (`system:masters`), nodes,
 * kube-system's service accounts, the control plane, and tenantry itself (its namespace's service
 * accounts). A CEL expression over the admission request.
 */
export function privilegedRequester(ownNamespace: string): string {
  const groups = [
    "system:masters",
    "system:nodes",
    "system:serviceaccounts:kube-system",
    `system:serviceaccounts:${ownNamespace}`,
  ];
  return [
    `request.userInfo.username in [${CONTROL_PLANE_USERS.map((u) => `'${u}'`).join(", ")}]`,
    `(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in [${groups.map((g) => `'${g}'`).join(", ")}]))`,
  ].join(" || ");
}

/**
 * The configuration holding each Fail webhook's copy for privileged requesters
 * ({@link privilegedRequester}), with failurePolicy Ignore: while tenantry answers they are
 * checked as before; while it is down they go through. Same webhook names in a configuration of
 * their own, so refusals read the same whoever is refused.
 */
export function privilegedConfigurationName(configurationName: string): string {
  return `${configurationName}-privileged`;
}

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
  const privileged = privilegedRequester(ownNamespace);
  // A Fail webhook is split: tenant users (and anyone else not privileged) fail closed when
  // tenantry is down; privileged requesters are still checked while it is up, never blocked when not.
  const entry = (w: AdmissionWebhook, audience: "all" | "others" | "privileged") => ({
    name: w.name,
    admissionReviewVersions: ["v1"],
    sideEffects: w.sideEffects ?? "None",
    failurePolicy: audience === "privileged" ? "Ignore" : w.failurePolicy,
    matchPolicy: "Equivalent",
    timeoutSeconds: w.timeoutSeconds ?? 5,
    rules: w.rules,
    ...(w.everywhere
      ? w.namespaceSelector
        ? { namespaceSelector: w.namespaceSelector }
        : {}
      : { namespaceSelector: withExemptions(w.namespaceSelector, exempt) }),
    ...(w.objectSelector ? { objectSelector: w.objectSelector } : {}),
    ...(audience === "all"
      ? w.matchConditions?.length
        ? { matchConditions: w.matchConditions }
        : {}
      : {
          matchConditions: [
            ...(w.matchConditions ?? []),
            audience === "privileged"
              ? { name: "privileged-requester", expression: privileged }
              : { name: "not-privileged-requester", expression: `!(${privileged})` },
          ],
        }),
    ...(w.kind === "mutating" ? { reinvocationPolicy: w.reinvocationPolicy ?? "IfNeeded" } : {}),
    clientConfig: endpoint.url
      ? { url: `${endpoint.url}${w.path}`, caBundle }
      : { service: { ...endpoint.service, path: w.path }, caBundle },
  });
  const objects: KubernetesObject[] = [];
  for (const kind of ["mutating", "validating"] as const) {
    const selected = webhooks.filter((w) => w.kind === kind);
    if (selected.length === 0) continue;
    // What fails closed for everyone needs no privileged copy.
    const failing = selected.filter((w) => w.failurePolicy === "Fail" && !w.everywhere);
    const configuration = (name: string, entries: unknown[]) =>
      ({
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: kind === "mutating" ? "MutatingWebhookConfiguration" : "ValidatingWebhookConfiguration",
        metadata: { name, labels: { "app.kubernetes.io/managed-by": "tenantry" } },
        webhooks: entries,
      }) as KubernetesObject;
    objects.push(
      configuration(
        configurationName,
        selected.map((w) => entry(w, failing.includes(w) ? "others" : "all")),
      ),
    );
    if (failing.length) {
      objects.push(
        configuration(
          privilegedConfigurationName(configurationName),
          failing.map((w) => entry(w, "privileged")),
        ),
      );
    }
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
