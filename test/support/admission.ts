import { checkLabel, SHARED_ENTRIES } from "../../src/webhooks/index.js";

/**
 * Where kube-apiserver sends a check's requests: one of the dispatcher's shared entries (objects in
 * tenant namespaces, cluster-scoped objects), or an entry of the check's own.
 */
export type ServedBy = keyof typeof SHARED_ENTRIES | "own";

/**
 * The start of kube-apiserver's error when a tenantry check refuses: the entry's name, then (for a
 * shared entry) the check's short name, e.g. `admission webhook "tenant-namespaces.admission.tenantry.dev"
 * denied the request: pod-safety: `.
 */
export function refusalPrefix(check: string, servedBy: ServedBy): string {
  if (servedBy === "own") return `admission webhook "${check}" denied the request: `;
  return `admission webhook "${SHARED_ENTRIES[servedBy].name}" denied the request: ${checkLabel({ name: check })}: `;
}

/** {@link refusalPrefix} as a regular expression source. */
export function refusalPattern(check: string, servedBy: ServedBy): string {
  return refusalPrefix(check, servedBy).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
