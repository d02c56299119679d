export { ACCESS_CACHE_TTL_SECONDS, type AccessWebhooks } from "./access-webhooks.js";
export { type BuildOptions, type ComponentBinaries, ensureComponents } from "./build.js";
export type { ClusterPorts, ClusterState, ClusterStatus } from "./cluster.js";
export { LocalCluster } from "./cluster.js";
export { components, pinnedVersion } from "./components.js";
export { ClusterHarness, type HarnessOptions } from "./harness.js";
export { renderKubeconfig } from "./kubeconfig.js";
export {
  DEFAULT_FLAVORS,
  DEFAULT_MACHINE_DELAYS,
  type HostedMachine,
  type HostFlavor,
  type MachineDelays,
  MachineHost,
  type MachineHostOptions,
} from "./machines/host.js";
export { assertPortFree, freePort, isPortFree } from "./ports.js";
export {
  type ClusterSpec,
  defaultClusters,
  KWOK_NODE_ANNOTATION,
  PROVIDER_LABEL,
  REGION_LABEL,
  specFor,
  validateClusterSpec,
  ZONE_LABEL,
} from "./spec.js";
