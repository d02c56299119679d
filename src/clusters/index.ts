/** The cluster registry (registered clusters, their credentials, health and labels): its only public entry. */

export {
  CLUSTER_KUBECONFIG_KEY,
  type Cluster,
  ClusterSchema,
  type ClusterSpec,
  type ClusterStatus,
  DEFAULT_CLUSTER_PROVIDER,
  MAX_REGISTERED_CLUSTER_NAME,
  type UserCa,
} from "./api/cluster.js";
export { CLUSTER_CRD, CLUSTERS_CRDS } from "./api/crds.js";
export { CLUSTER_REGISTRY, ClustersCapability, type ClustersOptions } from "./capability.js";
export { ClusterHealthController, type ClusterHealthControllerOptions } from "./controller.js";
export {
  DEFAULT_REQUEST_TIMEOUT_MS,
  parseClusterKubeconfig,
  registeredClusterClient,
  standaloneKubeconfig,
  withRequestDeadline,
} from "./credentials.js";
export { capacityText, describeUserCa, nodeCapacity } from "./probe.js";
export {
  checkClusterReachable,
  checkRegisteredClusterName,
  DEFAULT_REGISTRY_NAMESPACE,
  labelCluster,
  listClusters,
  type RegisterClusterOptions,
  readCluster,
  registerCluster,
  removeCluster,
} from "./registration.js";
export {
  CLUSTER_LABEL,
  ClusterRegistry,
  type ClusterRegistryOptions,
  ClusterUnavailable,
  clusterSecretName,
  providerOf,
} from "./registry.js";
