import type { CoreV1Api, V1Namespace } from "@kubernetes/client-node";
import { ignoreNotFound } from "./errors.js";

/** RFC 1123 label, as Kubernetes names namespaces and Services: at most 63 characters. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function isDnsLabel(name: string): boolean {
  return DNS_LABEL.test(name);
}

/**
 * The namespace as the API server has it, or undefined when there is none. A name that is not a
 * DNS label cannot name a namespace, so it is not asked for: the API server would answer 400, and
 * admission sees such names (a namespace being created is named by its request before the API
 * server validates it).
 */
export async function readNamespaceIfExists(core: CoreV1Api, name: string): Promise<V1Namespace | undefined> {
  if (!isDnsLabel(name)) return undefined;
  return ignoreNotFound(core.readNamespace({ name }));
}
