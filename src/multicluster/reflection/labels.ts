/** Names that mark what reflection writes, in the providers and on local pods. */
import { ORIGIN_CLUSTER_ID_LABEL, ORIGIN_NAMESPACE_LABEL } from "../offloading/labels.js";

/** On a reflected pod in the provider: the uid of the local pod it stands for. */
export const ORIGIN_UID_ANNOTATION = "offloading.tenantry.dev/origin-uid";

/**
 * Condition tenantry sets on a local pod once its remote pod exists. A pod that has it and whose
 * remote pod is gone was deleted in the provider (not merely not created yet).
 */
export const REFLECTED_CONDITION = "tenantry.dev/Reflected";

/** The two labels every reflected object carries: where it comes from. */
export function originLabels(originClusterId: string, localNamespace: string): Record<string, string> {
  return { [ORIGIN_CLUSTER_ID_LABEL]: originClusterId, [ORIGIN_NAMESPACE_LABEL]: localNamespace };
}

/** Label selector for the objects this cluster reflected from one local namespace. */
export function originSelector(originClusterId: string, localNamespace: string): string {
  return `${ORIGIN_CLUSTER_ID_LABEL}=${originClusterId},${ORIGIN_NAMESPACE_LABEL}=${localNamespace}`;
}

/** Annotations that describe the local object only and are not copied. */
const LOCAL_ANNOTATIONS = new Set(["kubectl.kubernetes.io/last-applied-configuration"]);

export function withoutLocalAnnotations(
  annotations: Record<string, string> | undefined,
): Record<string, string> {
  return Object.fromEntries(Object.entries(annotations ?? {}).filter(([key]) => !LOCAL_ANNOTATIONS.has(key)));
}
