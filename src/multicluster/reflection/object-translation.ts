/**
 * Services, ConfigMaps and Secrets of an offloaded namespace as their copies in a replica
 * namespace: what is copied, what is left out, and what is rewritten. Pure functions.
 */
import type {
  KubernetesObject,
  V1ConfigMap,
  V1Secret,
  V1Service,
  V1ServiceSpec,
} from "@kubernetes/client-node";
import { DERIVED_FROM_IMPORT_LABEL } from "../services/plan.js";
import { originLabels, withoutLocalAnnotations } from "./labels.js";

/** The kinds reflected into every replica namespace. */
export const REFLECTED_KINDS = ["Service", "ConfigMap", "Secret"] as const;
export type ReflectedKind = (typeof REFLECTED_KINDS)[number];

/** Every namespace has its own, made by kube-controller-manager from its cluster's CA. */
const ROOT_CA_CONFIGMAP = "kube-root-ca.crt";
/** Legacy token Secrets only authenticate against the cluster that signed them. */
const SERVICE_ACCOUNT_TOKEN_TYPE = "kubernetes.io/service-account-token";

/**
 * Field selectors for the consumer's informers: the objects never reflected are not even cached.
 * (The `kubernetes` Service of namespace `default` cannot be selected out; {@link isReflected} does.)
 */
export const LOCAL_FIELD_SELECTORS: Record<ReflectedKind, string | undefined> = {
  Service: undefined,
  ConfigMap: `metadata.name!=${ROOT_CA_CONFIGMAP}`,
  Secret: `type!=${SERVICE_ACCOUNT_TOKEN_TYPE}`,
};

/** Whether a local object of `kind` gets copies in the replica namespaces. */
export function isReflected(kind: ReflectedKind, obj: KubernetesObject): boolean {
  const { name, namespace, deletionTimestamp } = obj.metadata ?? {};
  if (deletionTimestamp) return false;
  switch (kind) {
    case "ConfigMap":
      return name !== ROOT_CA_CONFIGMAP;
    case "Secret":
      return (obj as V1Secret).type !== SERVICE_ACCOUNT_TOKEN_TYPE;
    case "Service":
      // A derived Service gives an import its clusterset IP in its own cluster: every cluster of
      // the namespace makes its own.
      if (obj.metadata?.labels?.[DERIVED_FROM_IMPORT_LABEL] !== undefined) return false;
      return !(namespace === "default" && name === "kubernetes");
  }
}

export interface CopyTarget {
  remoteNamespace: string;
  originClusterId: string;
}

/** The copy to server-side apply in the replica namespace (undefined for objects not reflected). */
export function reflectedCopy(
  kind: ReflectedKind,
  local: KubernetesObject,
  target: CopyTarget,
): KubernetesObject | undefined {
  if (!isReflected(kind, local)) return undefined;
  const metadata = {
    name: local.metadata!.name!,
    namespace: target.remoteNamespace,
    labels: {
      ...(local.metadata?.labels ?? {}),
      ...originLabels(target.originClusterId, local.metadata!.namespace!),
    },
    ...(local.metadata?.annotations
      ? { annotations: withoutLocalAnnotations(local.metadata.annotations) }
      : {}),
  };
  switch (kind) {
    case "ConfigMap": {
      const { data, binaryData, immutable } = local as V1ConfigMap;
      return { apiVersion: "v1", kind, metadata, ...defined({ data, binaryData, immutable }) } as V1ConfigMap;
    }
    case "Secret": {
      const { data, type, immutable } = local as V1Secret;
      return { apiVersion: "v1", kind, metadata, ...defined({ data, type, immutable }) } as V1Secret;
    }
    case "Service":
      return {
        apiVersion: "v1",
        kind,
        metadata,
        spec: remoteServiceSpec((local as V1Service).spec ?? {}),
      } as V1Service;
  }
}

/**
 * The Service spec for the provider. Addresses and ports allocated by the consumer mean nothing
 * there (clusterIP, nodePorts, healthCheckNodePort, IP families), and NodePort and LoadBalancer
 * become ClusterIP: the provider's tenant may not be allowed to open node ports or load
 * balancers, and pods reach the Service by name inside the replica namespace anyway. Headless
 * (clusterIP None) and ExternalName Services stay what they are.
 */
export function remoteServiceSpec(spec: V1ServiceSpec): V1ServiceSpec {
  const type = spec.type === "ExternalName" ? "ExternalName" : "ClusterIP";
  const result: V1ServiceSpec = { type };
  if (spec.clusterIP === "None") result.clusterIP = "None";
  if (spec.ports) {
    result.ports = spec.ports.map(({ nodePort: _nodePort, ...port }) => port);
  }
  for (const field of [
    "selector",
    "externalName",
    "sessionAffinity",
    "sessionAffinityConfig",
    "publishNotReadyAddresses",
    "internalTrafficPolicy",
    "trafficDistribution",
  ] as const) {
    if (spec[field] !== undefined) (result as Record<string, unknown>)[field] = spec[field];
  }
  if (type === "ExternalName") delete result.internalTrafficPolicy;
  return result;
}

function defined<T extends Record<string, unknown>>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Partial<T>;
}
