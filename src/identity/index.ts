/** The identity capability (users, tokens, identity providers, certificates): its only public entry. */

export { IDENTITY_CRDS, USER_CRD } from "./api/crds.js";
export { MAX_USERNAME, type User, UserSchema, type UserSpec } from "./api/user.js";
export { Authenticator, type AuthenticatorOptions } from "./authenticator.js";
export {
  type Authentication,
  AuthenticationError,
  type Identity,
  type IdentityProvider,
  IdentityProviderUnavailable,
  type IssuedToken,
  type PasswordCredentials,
  tenantNameFor,
} from "./providers/provider.js";
export {
  requestUserCertificate,
  type UserCertificateOptions,
  type UserCredentials,
  userKubeconfig,
} from "./user-certificates.js";
