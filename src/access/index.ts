/** The access capability (authorization webhook, cross-tenant AccessGrants): its only public entry. */
export {
  type AccessGrant,
  AccessGrantSchema,
  type AccessGrantSpec,
  GRANTABLE_VERBS,
  GRANTEE_KINDS,
  type GrantRule,
  UNGRANTABLE_API_GROUPS,
} from "./api/access-grant.js";
export { ACCESS_CRDS, ACCESS_GRANT_CRD } from "./api/crds.js";
export {
  type AuthorizationDecision,
  Authorizer,
  type AuthorizerOptions,
  accessGrantClusterRoles,
  ruleMatches,
  type SubjectAccessReviewSpec,
} from "./authorizer.js";
export { AccessCapability, AUTHORIZER } from "./capability.js";
export { accessGrantWebhook } from "./grant-admission.js";
