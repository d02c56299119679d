/** The identity capability (users, tokens, identity providers, certificates): its only public entry. */

export { IDENTITY_CRDS, USER_CRD } from "./api/crds.js";
export { MAX_USERNAME, type User, UserSchema, type UserSpec } from "./api/user.js";
export {
  Authenticator,
  type AuthenticatorOptions,
  UNRECOGNIZED_TOKEN_REASON,
} from "./authenticator.js";
export {
  BUILTIN_PROVIDER,
  BuiltinIdentity,
  type BuiltinIdentityOptions,
  MAX_TOKEN_TTL_SECONDS,
  type NewUser,
  TOKEN_AUDIENCE,
} from "./builtin/builtin-identity.js";
export { IDENTITY, IdentityCapability, type IdentityOptions, type IdentityServices } from "./capability.js";
export {
  kubeconfigCertificates,
  renderUserKubeconfig,
  renewUserKubeconfig,
  userEntryName,
  userKubeconfig,
  writeKubeconfigFile,
} from "./kubeconfig.js";
export {
  type KubernetesUser,
  kubernetesUserOf,
  PROVIDER_EXTRA_KEY,
  TENANT_EXTRA_KEY,
  tenantAdminsGroup,
  tenantGroup,
} from "./kubernetes-user.js";
export {
  PROVIDER_CONFIG_KEY,
  PROVIDER_CONFIG_SECRET,
  type ProviderConfig,
  ProviderConfigSchema,
  ProviderConfigWatch,
  parseProviderConfig,
  providersFromConfig,
} from "./provider-config.js";
export {
  KeystoneIdentityProvider,
  type KeystoneProviderOptions,
  type KeystoneServiceCredentials,
} from "./providers/keystone.js";
export { type OidcClaims, OidcIdentityProvider, type OidcProviderOptions } from "./providers/oidc.js";
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
  admitsFirstLogin,
  PROVISIONED_BY_LABEL,
  TenantProvisioner,
  type TenantProvisionerOptions,
} from "./provisioning.js";
export {
  AccessServer,
  type AccessServerOptions,
  AUTHENTICATE_PATH,
  AUTHORIZE_PATH,
  type AuthorizeFunction,
  DISCOVERY_PATH,
  JWKS_PATH,
  LOGIN_PATH,
  LOGOUT_PATH,
  OPENAPI_PATH as IDENTITY_OPENAPI_PATH,
  WHOAMI_PATH,
} from "./server.js";
export {
  type CertificateDetails,
  type CertificateRequestSummary,
  certificateDetails,
  checkCertificatePolicy,
  checkUserCertificateRequest,
  classifyExpiry,
  DEFAULT_EXPIRATION_SECONDS,
  DEFAULT_MAX_EXPIRATION_SECONDS,
  formatDuration,
  type IssuedUserCertificates,
  issueUserCertificates,
  keyMatchesRequest,
  MIN_EXPIRATION_SECONDS,
  parseCertificateRequest,
  parseDuration,
  requestUserCertificate,
  type SignCertificateRequestOptions,
  signCertificateRequest,
  type UserCertificateOptions,
  type UserCredentials,
} from "./user-certificates.js";
