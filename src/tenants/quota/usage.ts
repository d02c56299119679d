import type {
  V1Container,
  V1PersistentVolumeClaim,
  V1Pod,
  V1ScopeSelector,
  V1Service,
} from "@kubernetes/client-node";
import { addAmounts, parseQuantity, type ResourceAmounts } from "../../common/index.js";

/**
 * What one object adds to a quota, with the names and rules Kubernetes' own ResourceQuota uses,
 * so that a tenant-wide quota reads exactly like a namespace quota.
 */
export interface ResourceRef {
  group: string;
  resource: string;
}

const ONE = parseQuantity("1");
const STANDARD_COMPUTE = new Set(["cpu", "memory", "ephemeral-storage", "hugepages"]);

function containerAmounts(
  containers: V1Container[] | undefined,
  field: "requests" | "limits",
): ResourceAmounts {
  return addAmounts(
    ...(containers ?? []).map(
      (c) =>
        new Map(
          Object.entries(c.resources?.[field] ?? {}).map(([name, value]) => [
            name,
            parseQuantity(String(value)),
          ]),
        ),
    ),
  );
}

function raiseTo(target: ResourceAmounts, amounts: ResourceAmounts): void {
  for (const [name, value] of amounts) if (value > (target.get(name) ?? 0n)) target.set(name, value);
}

/**
 * Pod-level effective amount, as Kubernetes computes it (component-helpers' PodRequests): the
 * containers plus native sidecars (init containers with restartPolicy Always, which keep running),
 * or the largest init step with the sidecars started before it, whichever is larger; plus overhead
 * (on limits too).
 */
function effective(pod: V1Pod, field: "requests" | "limits"): ResourceAmounts {
  const sum = containerAmounts(pod.spec?.containers, field);
  let sidecars: ResourceAmounts = new Map();
  const initPeak: ResourceAmounts = new Map();
  for (const init of pod.spec?.initContainers ?? []) {
    const own = containerAmounts([init], field);
    if (init.restartPolicy === "Always") {
      sidecars = addAmounts(sidecars, own);
      for (const [name, value] of own) sum.set(name, (sum.get(name) ?? 0n) + value);
      raiseTo(initPeak, sidecars);
    } else {
      raiseTo(initPeak, addAmounts(own, sidecars));
    }
  }
  raiseTo(sum, initPeak);
  for (const [name, value] of Object.entries(pod.spec?.overhead ?? {})) {
    // A pod without a limit on a resource stays unlimited: overhead does not invent one.
    if (field === "limits" && !sum.has(name)) continue;
    sum.set(name, (sum.get(name) ?? 0n) + parseQuantity(String(value)));
  }
  return sum;
}

export function isTerminalPod(pod: V1Pod): boolean {
  return pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
}

export function isBestEffort(pod: V1Pod): boolean {
  const all = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  return all.every((c) => {
    const keys = [...Object.keys(c.resources?.requests ?? {}), ...Object.keys(c.resources?.limits ?? {})];
    return !keys.some((k) => k === "cpu" || k === "memory");
  });
}

export function podUsage(pod: V1Pod): ResourceAmounts {
  const usage: ResourceAmounts = new Map([
    ["pods", ONE],
    ["count/pods", ONE],
  ]);
  if (isTerminalPod(pod)) return new Map();
  for (const [name, value] of effective(pod, "requests")) {
    usage.set(`requests.${name}`, value);
    if (name === "cpu" || name === "memory" || name === "ephemeral-storage") usage.set(name, value);
  }
  for (const [name, value] of effective(pod, "limits")) {
    if (STANDARD_COMPUTE.has(name) || name.startsWith("hugepages-")) usage.set(`limits.${name}`, value);
  }
  return usage;
}

function serviceUsage(service: V1Service): ResourceAmounts {
  const usage: ResourceAmounts = new Map([
    ["services", ONE],
    ["count/services", ONE],
  ]);
  const type = service.spec?.type ?? "ClusterIP";
  if (type === "LoadBalancer") usage.set("services.loadbalancers", ONE);
  if (type === "NodePort" || type === "LoadBalancer") {
    usage.set("services.nodeports", BigInt(service.spec?.ports?.length ?? 0) * ONE);
  }
  return usage;
}

function claimUsage(claim: V1PersistentVolumeClaim): ResourceAmounts {
  const usage: ResourceAmounts = new Map([
    ["persistentvolumeclaims", ONE],
    ["count/persistentvolumeclaims", ONE],
  ]);
  const storage = claim.spec?.resources?.requests?.storage;
  if (storage) usage.set("requests.storage", parseQuantity(String(storage)));
  const storageClass = claim.spec?.storageClassName;
  if (storageClass) {
    usage.set(`${storageClass}.storageclass.storage.k8s.io/persistentvolumeclaims`, ONE);
    if (storage)
      usage.set(
        `${storageClass}.storageclass.storage.k8s.io/requests.storage`,
        parseQuantity(String(storage)),
      );
  }
  return usage;
}

/** `count/<resource>[.<group>]` as ResourceQuota names object counts. */
export function countName(ref: ResourceRef): string {
  return ref.group ? `count/${ref.resource}.${ref.group}` : `count/${ref.resource}`;
}

const LEGACY_COUNT_NAMES: Record<string, string> = {
  configmaps: "configmaps",
  secrets: "secrets",
  replicationcontrollers: "replicationcontrollers",
  resourcequotas: "resourcequotas",
};

export function objectUsage(ref: ResourceRef, object: unknown): ResourceAmounts {
  if (ref.group === "" && ref.resource === "pods") return podUsage(object as V1Pod);
  if (ref.group === "" && ref.resource === "services") return serviceUsage(object as V1Service);
  if (ref.group === "" && ref.resource === "persistentvolumeclaims")
    return claimUsage(object as V1PersistentVolumeClaim);
  const usage: ResourceAmounts = new Map([[countName(ref), ONE]]);
  const legacy = ref.group === "" ? LEGACY_COUNT_NAMES[ref.resource] : undefined;
  if (legacy) usage.set(legacy, ONE);
  return usage;
}

/** Keeps only what a quota with these hard limits tracks. */
export function tracked(usage: ResourceAmounts, hard: ResourceAmounts): ResourceAmounts {
  return new Map([...usage].filter(([name]) => hard.has(name)));
}

type Scope =
  | "Terminating"
  | "NotTerminating"
  | "BestEffort"
  | "NotBestEffort"
  | "PriorityClass"
  | "CrossNamespacePodAffinity";

function podMatchesScope(pod: V1Pod, scope: string, operator = "Exists", values: string[] = []): boolean {
  switch (scope as Scope) {
    case "Terminating":
      return pod.spec?.activeDeadlineSeconds != null;
    case "NotTerminating":
      return pod.spec?.activeDeadlineSeconds == null;
    case "BestEffort":
      return isBestEffort(pod);
    case "NotBestEffort":
      return !isBestEffort(pod);
    case "PriorityClass": {
      const name = pod.spec?.priorityClassName;
      switch (operator) {
        case "In":
          return name !== undefined && values.includes(name);
        case "NotIn":
          return name === undefined || !values.includes(name);
        case "Exists":
          return name !== undefined && name !== "";
        case "DoesNotExist":
          return name === undefined || name === "";
        default:
          return false;
      }
    }
    case "CrossNamespacePodAffinity": {
      const terms = [
        ...(pod.spec?.affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []),
        ...(pod.spec?.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []),
      ];
      return terms.some((t) => (t.namespaces?.length ?? 0) > 0 || t.namespaceSelector !== undefined);
    }
    default:
      return false;
  }
}

/**
 * Whether a quota with these scopes counts the object. Scopes only ever narrow pods; a scoped quota
 * counts nothing else, as in Kubernetes.
 */
export function matchesScopes(
  ref: ResourceRef,
  object: unknown,
  scopes: string[] = [],
  selector?: V1ScopeSelector,
): boolean {
  const expressions = selector?.matchExpressions ?? [];
  if (scopes.length === 0 && expressions.length === 0) return true;
  if (!(ref.group === "" && ref.resource === "pods")) return false;
  const pod = object as V1Pod;
  return (
    scopes.every((s) => podMatchesScope(pod, s)) &&
    expressions.every((e) => podMatchesScope(pod, e.scopeName, e.operator, e.values ?? []))
  );
}
