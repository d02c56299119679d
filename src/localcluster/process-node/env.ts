import type { V1ConfigMap, V1Container, V1Pod, V1Secret } from "@kubernetes/client-node";
import { parseQuantity } from "../../common/index.js";

/**
 * A container's environment as the kubelet builds it: envFrom, then env (later entries win), each
 * value with `$(VAR)` references to variables defined before it expanded; command and args are
 * then expanded with the whole environment.
 */

/** What the kubelet refuses to start a container with (CreateContainerConfigError). */
export class ContainerConfigError extends Error {}

export interface EnvSources {
  configMap(namespace: string, name: string): Promise<V1ConfigMap | undefined>;
  secret(namespace: string, name: string): Promise<V1Secret | undefined>;
}

export interface PodAddresses {
  podIP: string;
  hostIP: string;
}

/**
 * Kubernetes' `$(VAR)` expansion: a defined variable is replaced, an undefined reference is kept
 * as written, and `$$` is a literal `$` (so `$$(VAR)` gives `$(VAR)`).
 */
export function expandReferences(text: string, env: ReadonlyMap<string, string>): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char !== "$" || i === text.length - 1) {
      out += char;
      continue;
    }
    const next = text[i + 1]!;
    if (next === "$") {
      out += "$";
      i++;
    } else if (next === "(") {
      const close = text.indexOf(")", i + 2);
      if (close < 0) {
        out += text.slice(i);
        break;
      }
      const name = text.slice(i + 2, close);
      out += env.has(name) ? env.get(name)! : `$(${name})`;
      i = close;
    } else {
      out += char;
    }
  }
  return out;
}

/** The value of a downward-API field path, as the kubelet resolves it for env and volumes. */
export function fieldValue(pod: V1Pod, fieldPath: string, addresses: PodAddresses): string {
  const keyed = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (keyed) return pod.metadata?.[keyed[1] as "labels" | "annotations"]?.[keyed[2]!] ?? "";
  const formatMap = (map?: Record<string, string>) =>
    Object.entries(map ?? {})
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => `${k}="${v}"`)
      .join("\n");
  switch (fieldPath) {
    case "metadata.name":
      return pod.metadata?.name ?? "";
    case "metadata.namespace":
      return pod.metadata?.namespace ?? "";
    case "metadata.uid":
      return pod.metadata?.uid ?? "";
    case "metadata.labels":
      return formatMap(pod.metadata?.labels);
    case "metadata.annotations":
      return formatMap(pod.metadata?.annotations);
    case "spec.nodeName":
      return pod.spec?.nodeName ?? "";
    case "spec.serviceAccountName":
      return pod.spec?.serviceAccountName ?? "";
    case "status.hostIP":
    case "status.hostIPs":
      return addresses.hostIP;
    case "status.podIP":
    case "status.podIPs":
      return addresses.podIP;
    default:
      throw new ContainerConfigError(`unsupported fieldPath "${fieldPath}"`);
  }
}

/** `resourceFieldRef`: a limit (the node's allocatable when unset) or request, divided and rounded up. */
export function resourceValue(
  container: V1Container,
  resource: string,
  divisor: string | undefined,
  allocatable: Record<string, string>,
): string {
  const [kind, name] = resource.split(".") as ["limits" | "requests", string];
  if ((kind !== "limits" && kind !== "requests") || !name)
    throw new ContainerConfigError(`unsupported resource "${resource}"`);
  const set = container.resources?.[kind]?.[name] ?? (kind === "limits" ? allocatable[name] : undefined);
  const amount = set === undefined ? 0n : parseQuantity(String(set));
  const unit = parseQuantity(divisor ?? "1");
  if (unit <= 0n) throw new ContainerConfigError(`divisor of ${resource} must be positive`);
  return String((amount + unit - 1n) / unit);
}

export async function containerEnv(
  pod: V1Pod,
  container: V1Container,
  sources: EnvSources,
  addresses: PodAddresses,
  allocatable: Record<string, string>,
  base: ReadonlyMap<string, string> = new Map(),
): Promise<Map<string, string>> {
  const namespace = pod.metadata?.namespace ?? "default";
  const env = new Map(base);
  for (const from of container.envFrom ?? []) {
    const prefix = from.prefix ?? "";
    if (from.configMapRef) {
      const map = await sources.configMap(namespace, from.configMapRef.name!);
      if (!map) {
        if (from.configMapRef.optional) continue;
        throw new ContainerConfigError(`configmap "${from.configMapRef.name}" not found`);
      }
      for (const [k, v] of Object.entries(map.data ?? {})) env.set(prefix + k, v);
    }
    if (from.secretRef) {
      const secret = await sources.secret(namespace, from.secretRef.name!);
      if (!secret) {
        if (from.secretRef.optional) continue;
        throw new ContainerConfigError(`secret "${from.secretRef.name}" not found`);
      }
      for (const [k, v] of Object.entries(secret.data ?? {}))
        env.set(prefix + k, Buffer.from(v, "base64").toString("utf8"));
    }
  }
  for (const variable of container.env ?? []) {
    const source = variable.valueFrom;
    if (!source) {
      env.set(variable.name, expandReferences(variable.value ?? "", env));
    } else if (source.fieldRef) {
      env.set(variable.name, fieldValue(pod, source.fieldRef.fieldPath, addresses));
    } else if (source.resourceFieldRef) {
      const divisor = source.resourceFieldRef.divisor;
      env.set(
        variable.name,
        resourceValue(
          container,
          source.resourceFieldRef.resource,
          divisor === undefined ? undefined : String(divisor),
          allocatable,
        ),
      );
    } else if (source.configMapKeyRef) {
      const ref = source.configMapKeyRef;
      const map = await sources.configMap(namespace, ref.name!);
      const value = map?.data?.[ref.key];
      if (value === undefined) {
        if (ref.optional) continue;
        throw new ContainerConfigError(
          map
            ? `couldn't find key ${ref.key} in ConfigMap ${namespace}/${ref.name}`
            : `configmap "${ref.name}" not found`,
        );
      }
      env.set(variable.name, value);
    } else if (source.secretKeyRef) {
      const ref = source.secretKeyRef;
      const secret = await sources.secret(namespace, ref.name!);
      const value = secret?.data?.[ref.key];
      if (value === undefined) {
        if (ref.optional) continue;
        throw new ContainerConfigError(
          secret
            ? `couldn't find key ${ref.key} in Secret ${namespace}/${ref.name}`
            : `secret "${ref.name}" not found`,
        );
      }
      env.set(variable.name, Buffer.from(value, "base64").toString("utf8"));
    }
  }
  return env;
}
