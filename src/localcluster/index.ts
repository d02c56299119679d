export { ACCESS_CACHE_TTL_SECONDS, type AccessWebhooks, type WebhookClient } from "./access-webhooks.js";
export {
  type BuildOptions,
  type ComponentBinaries,
  ensureComponents,
  ensureHelm,
  ensureHydra,
  ensureObjectStoreBinary,
  ensureWireguardGo,
} from "./build.js";
export type { ClusterPorts, ClusterState, ClusterStatus } from "./cluster.js";
export { COMPONENT_ORDER, LocalCluster, webhookClientCaFile } from "./cluster.js";
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
export { type LocalObjectStoreState, startLocalObjectStore, stopLocalObjectStore } from "./object-store.js";
export { assertPortFree, freePort, isPortFree } from "./ports.js";
export {
  LOCAL_IMAGES,
  LOCAL_PROVISIONER,
  LOCAL_STORAGE_CLASS,
  type LocalImageKind,
  PROCESS_NODE_LABEL,
  PROCESS_NODE_NAME,
  PROCESS_NODE_PLACEMENT,
  PROCESS_NODE_TAINT,
} from "./process-node/constants.js";
export { ensureJupyterServer, type JupyterServerInstall } from "./process-node/jupyter-venv.js";
export { letPodsReachHostPorts } from "./process-node/network/index.js";
export { hurryStopping, logTail } from "./processes.js";
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
