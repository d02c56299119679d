/**
 * The composition root's door, for the CLI that wraps it: starting tenantry (in a cluster or on
 * the embedded local clusters), the demo, the health server and the diagnosis `tenantry doctor` runs.
 */
export { ALL_CRDS } from "./crds.js";
export {
  DEMO_MEMBER,
  DEMO_OPERATOR,
  DEMO_OWNER,
  DEMO_PASSWORDS,
  DEMO_RUNTIME_INSTANCE,
  DEMO_TENANT,
  installDemo,
  installDemoRuntimeService,
  jupyterTokenOf,
} from "./demo.js";
export { type CheckStatus, diagnose, type Finding, leaderLeases } from "./doctor.js";
export {
  ENDPOINTS_FILE,
  registerEmbeddedClusters,
  startEmbeddedTenantry,
  type TenantryEndpoints,
} from "./embedded.js";
export { parseAddress, startHealthServer } from "./health.js";
export {
  CAPABILITY_NAMES,
  controllersLease,
  LEADING_CAPABILITIES,
  LEGACY_CONTROLLERS_LEASE,
  type RunningTenantry,
  startTenantry,
  TENANTRY_NAMESPACE,
  type TenantryOptions,
} from "./tenantry.js";
