/**
 * Token audiences in a TokenReview, decided as kube-apiserver decides them for its own tokens: a
 * review that names audiences gets back those the token is valid for, and a token valid for none
 * of them is not authenticated for them. Tokens of tenantry's providers are meant for the
 * Kubernetes API, so they are valid for its audiences as well as for their own `aud`.
 */
import type { Identity } from "./providers/provider.js";

/** What kube-apiserver uses when neither `--api-audiences` nor another issuer is set. */
export const DEFAULT_API_AUDIENCES = ["https://kubernetes.default.svc.cluster.local"];

export type AudienceDecision = { valid: true; audiences?: string[] } | { valid: false; reason: string };

export function reviewAudiences(
  identity: Pick<Identity, "audiences">,
  requested: readonly string[] | undefined,
  apiAudiences: readonly string[],
): AudienceDecision {
  // No audiences asked: the caller is the API server checking for itself.
  if (!requested || requested.length === 0) return { valid: true };
  // A token bound to no audience (Keystone's) is valid wherever its issuer is trusted.
  if (identity.audiences === undefined) return { valid: true, audiences: [...requested] };
  const own = new Set([...identity.audiences, ...apiAudiences]);
  const audiences = requested.filter((audience) => own.has(audience));
  if (audiences.length === 0) {
    return {
      valid: false,
      reason: `token audiences ${JSON.stringify(identity.audiences)} are invalid for the target audiences ${JSON.stringify(requested)}`,
    };
  }
  return { valid: true, audiences };
}
