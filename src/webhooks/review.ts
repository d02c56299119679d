/** The parts of admission.k8s.io/v1 AdmissionReview that tenantry's webhooks read and write. */
export interface AdmissionRequest<T = Record<string, unknown>> {
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: "CREATE" | "UPDATE" | "DELETE" | "CONNECT";
  userInfo: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  object?: T;
  oldObject?: T;
  dryRun?: boolean;
}

export interface JsonPatchOperation {
  op: "add" | "remove" | "replace";
  path: string;
  value?: unknown;
}

/** What a webhook handler decides; `patch` only for mutating webhooks. */
export type AdmissionDecision =
  | { allowed: true; patch?: JsonPatchOperation[]; warnings?: string[] }
  | { allowed: false; code?: number; message: string; reason?: string };

export const allow = (patch?: JsonPatchOperation[]): AdmissionDecision =>
  patch?.length ? { allowed: true, patch } : { allowed: true };

export const deny = (message: string, code = 403): AdmissionDecision => ({ allowed: false, code, message });

export interface AdmissionReviewResponse {
  apiVersion: "admission.k8s.io/v1";
  kind: "AdmissionReview";
  response: {
    uid: string;
    allowed: boolean;
    status?: { code: number; message: string; reason?: string };
    patchType?: "JSONPatch";
    patch?: string;
    warnings?: string[];
  };
}

export function toReviewResponse(uid: string, decision: AdmissionDecision): AdmissionReviewResponse {
  if (!decision.allowed) {
    return {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: {
        uid,
        allowed: false,
        status: {
          code: decision.code ?? 403,
          message: decision.message,
          ...(decision.reason ? { reason: decision.reason } : {}),
        },
      },
    };
  }
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: {
      uid,
      allowed: true,
      ...(decision.patch?.length
        ? {
            patchType: "JSONPatch" as const,
            patch: Buffer.from(JSON.stringify(decision.patch)).toString("base64"),
          }
        : {}),
      ...(decision.warnings?.length ? { warnings: decision.warnings } : {}),
    },
  };
}

/** Escapes a key for a JSON Pointer path segment (RFC 6901). */
export function pointerSegment(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/**
 * JSON Patch that sets labels on an object, creating `metadata.labels` when it is absent (an `add`
 * below a missing parent fails the whole request).
 */
export function setLabelsPatch(
  object: { metadata?: { labels?: Record<string, string> } } | undefined,
  labels: Record<string, string>,
): JsonPatchOperation[] {
  const current = object?.metadata?.labels;
  if (!object?.metadata) return [{ op: "add", path: "/metadata", value: { labels } }];
  if (!current) return [{ op: "add", path: "/metadata/labels", value: labels }];
  return Object.entries(labels)
    .filter(([key, value]) => current[key] !== value)
    .map(([key, value]) => ({
      op: key in current ? "replace" : "add",
      path: `/metadata/labels/${pointerSegment(key)}`,
      value,
    }));
}
