/** The tenant gateway (a kubectl-compatible reverse proxy in front of kube-apiserver): its only public entry. */

export {
  type CallerAuthentication,
  CallerAuthenticator,
  CLIENT_CA_CONFIGMAP,
  readClientCa,
} from "./authentication.js";
export { GATEWAY, GatewayCapability, type GatewayCapabilityOptions } from "./capability.js";
export type { RateLimit } from "./rate-limit.js";
export { GATEWAY_CLUSTER_ROLE, gatewayClusterRole } from "./rbac.js";
export { type Caller, callerTenants } from "./scope.js";
export { GATEWAY_TLS_SECRET, type GatewayOptions, type RunningGateway, startGateway } from "./server.js";
