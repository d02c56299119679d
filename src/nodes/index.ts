/** Worker nodes on demand (CloudVeneto CaaS's OpenStackNode; capability C6): its only public entry. */

export { joinTimeoutSeconds, NodeAdmission, type NodeAdmissionOptions } from "./admission.js";
export {
  NODE_PROVIDER_CRD,
  NODES_CRDS,
  validateNodeProvider,
  validateWorkerNode,
  WORKER_NODE_CRD,
} from "./api/crds.js";
export {
  DEFAULT_JOIN_TIMEOUT_SECONDS,
  NETWORK_MODES,
  type NodeProvider,
  NodeProviderSchema,
  type NodeProviderSpec,
  type NodeProviderStatus,
  PROVIDER_TYPES,
  type ProviderFlavor,
  type ProviderType,
} from "./api/node-provider.js";
export {
  DEFAULT_DRAIN_TIMEOUT_SECONDS,
  MAX_WORKER_NODE_NAME,
  NODE_POLICIES,
  type NodePolicy,
  WORKER_NODE_PHASES,
  type WorkerNode,
  type WorkerNodePhase,
  WorkerNodeSchema,
  type WorkerNodeSpec,
  type WorkerNodeStatus,
} from "./api/worker-node.js";
export {
  NODES,
  Nodes,
  NodesCapability,
  type NodesCapabilityOptions,
  type NodesOptions,
  SIMULATED_PROVIDER,
} from "./capability.js";
export { cordon, type DrainProgress, evictPods } from "./drain.js";
export { NodeInformers } from "./informers.js";
export {
  type BootstrapToken,
  bootstrapKubeconfig,
  bootstrapTokenSecret,
  bootstrapTokenSecretName,
  JOIN_PATHS,
  type JoinConfiguration,
  kubeletFlags,
  newBootstrapToken,
  renderUserData,
  tokenIdOfUser,
  tokenOfSecret,
} from "./join.js";
export {
  BOOTSTRAP_GROUP,
  BOOTSTRAP_NAMESPACE,
  KUBELET_CLIENT_SIGNER,
  LEGACY_NODE_LABELS,
  NODE_OWNER_LABEL,
  NODE_OWNER_TAINT,
  NODE_POLICY_LABEL,
  NODE_RESTRICTION_PREFIX,
  NODE_TENANT_LABEL,
  privateNodeTaint,
  WORKER_NODE_FINALIZER,
  WORKER_NODE_LABEL,
  WORKER_NODE_UID_LABEL,
} from "./labels.js";
export {
  excludesOthersPrivateNodes,
  othersPrivateNodesTolerated,
  placementViolation,
  placePod,
  withOwnerExclusion,
} from "./placement.js";
export { NodeProviderController, type NodeProviderControllerOptions } from "./provider-controller.js";
export {
  clusterTag,
  compareMicroversions,
  MAX_MICROVERSION,
  METADATA as OPENSTACK_METADATA,
  MIN_MICROVERSION,
  negotiateMicroversion,
  type OpenStackCredentials,
  type OpenStackOptions,
  OpenStackProvider,
} from "./providers/openstack.js";
export {
  credentialsFromSecret,
  ProviderRegistry,
  type ProviderRegistryOptions,
} from "./providers/registry.js";
export { type LocalMachine, type LocalMachineHost, SimulatedProvider } from "./providers/simulated.js";
export {
  type Flavor,
  firstIpv4,
  type Machine,
  type MachineOwner,
  type MachineProvider,
  type MachineRequest,
  type MachineState,
  ProviderError,
} from "./providers/spi.js";
export { nodesRbac, WORKER_NODE_REQUESTER_CLUSTER_ROLE } from "./rbac.js";
export { WorkerNodeController, type WorkerNodeControllerOptions } from "./worker-node-controller.js";
