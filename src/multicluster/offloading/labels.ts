/** Labels that tie local namespaces and objects to their replicas in the providers. */

/** On a namespace: `enabled` asks for the default NamespaceOffloading (every peer, default strategies). */
export const OFFLOADING_ENABLED_LABEL = "tenantry.dev/offloading";
export const OFFLOADING_ENABLED_VALUE = "enabled";
/** On a NamespaceOffloading made from the namespace label: removing the label removes it. */
export const CREATED_BY_LABEL_ANNOTATION = "tenantry.dev/created-by-namespace-label";
/** Keeps a NamespaceOffloading until its remote namespaces are gone (Liqo thesis, 6.1.3). */
export const OFFLOADING_FINALIZER = "tenantry.dev/offloading";

/**
 * On every remote namespace and every object reflected into one: the consumer cluster's id. Not
 * under `tenantry.dev/`, which the provider's own tenantry reserves for itself.
 */
export const ORIGIN_CLUSTER_ID_LABEL = "offloading.tenantry.dev/origin-cluster-id";
/** On every remote namespace and every object reflected into one: the local namespace. */
export const ORIGIN_NAMESPACE_LABEL = "offloading.tenantry.dev/origin-namespace";
/** Set by tenantry on every namespace that has a NamespaceOffloading: the pod webhook's scope. */
export const OFFLOADED_NAMESPACE_LABEL = "tenantry.dev/offloaded";
