/** The multi-cluster capability (cluster identity, peering, virtual nodes): its only public entry. */

export {
  MULTICLUSTER_CRDS,
  NAMESPACE_MAP_CRD,
  NAMESPACE_OFFLOADING_CRD,
  PEERING_CRD,
  REPLICATED_DEPLOYMENT_CRD,
  SERVICE_EXPORT_CRD,
  SERVICE_IMPORT_CRD,
} from "./api/crds.js";
export {
  MCS_API_VERSION,
  MCS_GROUP,
  MCS_SERVICE_NAME_LABEL,
  MCS_SOURCE_CLUSTER_LABEL,
  type ServiceExport,
  type ServiceImport,
} from "./api/mcs.js";
export {
  type CurrentMapping,
  MAPPING_PHASES,
  MAPPING_STRATEGIES,
  type MappingPhase,
  NAMESPACE_OFFLOADING_NAME,
  type NamespaceMap,
  type NamespaceMappingStrategy,
  NamespaceMapSchema,
  type NamespaceOffloading,
  NamespaceOffloadingSchema,
  type NamespaceOffloadingSpec,
  type NamespaceOffloadingStatus,
  OFFLOADING_PHASES,
  type OffloadingPhase,
  POD_OFFLOADING_STRATEGIES,
  type PodOffloadingStrategy,
  type RemoteNamespaceCondition,
} from "./api/offloading.js";
export {
  MAX_CLUSTER_NAME,
  type Peering,
  PeeringSchema,
  type PeeringSpec,
  type PeeringStatus,
} from "./api/peering.js";
export {
  type DeploymentConditionSummary,
  MAX_GENERATION_LABELS,
  MAX_REPLICATED_DEPLOYMENT_NAME,
  REPLICA_LABEL,
  REPLICATED_DEPLOYMENT_LABEL,
  type ReplicaStatus,
  type ReplicatedDeployment,
  ReplicatedDeploymentSchema,
  type ReplicatedDeploymentSpec,
  type ReplicatedDeploymentStatus,
} from "./api/replicated-deployment.js";
export {
  CLUSTER_LABELS,
  MULTICLUSTER_INFORMERS,
  MulticlusterCapability,
  type MulticlusterOptions,
  PEER_ADDRESSES,
} from "./capability.js";
export {
  CLUSTER_IDENTITY_CONFIGMAP,
  type ClusterIdentity,
  checkClusterLabels,
  checkClusterName,
  ensureClusterIdentity,
  parseClusterIdentity,
  readClusterIdentity,
} from "./identity.js";
export { MulticlusterInformers } from "./informers.js";
export {
  EXCHANGE_LABEL,
  exchangeConfigMapName,
  GATEWAY_NAME,
  GATEWAY_OBJECTS,
  GATEWAY_PORT,
  GATEWAY_TABLE,
  type GatewayPlacement,
  gatewayFromFlags,
  PeerAddresses,
  type PeerLink,
  PUBLIC_GATEWAY_CONFIGMAP,
  REMAPS_CONFIGMAP,
  remapAddress,
  TUNNEL_INTERFACE,
} from "./network/index.js";
export {
  type OffloadingControllersOptions,
  offloadingControllers,
} from "./offloading/index.js";
export {
  CREATED_BY_LABEL_ANNOTATION,
  OFFLOADED_NAMESPACE_LABEL,
  OFFLOADING_ENABLED_LABEL,
  OFFLOADING_ENABLED_VALUE,
  OFFLOADING_FINALIZER,
  ORIGIN_CLUSTER_ID_LABEL,
  ORIGIN_NAMESPACE_LABEL,
} from "./offloading/labels.js";
export { MAX_NAMESPACE_NAME, remoteNamespaceName } from "./offloading/names.js";
export { offloadingStatus } from "./offloading/offloading-status.js";
export {
  ALL_VIRTUAL_NODES,
  clusterSelectorOf,
  placePod,
  strategySelector,
} from "./offloading/pod-placement.js";
export { offloadingPodWebhook } from "./offloading/pod-webhook.js";
export {
  acceptedReplica,
  acceptedReplicas,
  type NamespaceReplica,
  peeringOfMap,
} from "./offloading/replicas.js";
export {
  DEFAULT_NAMESPACE,
  PEER_CERTIFICATE_SECONDS,
  PEER_CLUSTER_ID_LABEL,
  PEER_CLUSTER_NAME_LABEL,
  PeeringError,
  type PeeringSummary,
  type PeerOptions,
  type PeerResult,
  peerClusters,
  peeringSummaries,
  peerKubeconfig,
  peerRoleName,
  peerSecretName,
  peerTenantName,
  peerUsername,
  type UnpeerOptions,
  type UnpeerResult,
  unpeerClusters,
} from "./peer.js";
export {
  findPeerTenant,
  PEER_APPROVAL_REASON,
  PeerCertificateApprover,
  type PeerCertificateApproverOptions,
} from "./peer-certificate-approver.js";
export {
  PeerCertificateRenewer,
  type PeerCertificateRenewerOptions,
  peerCertificateLabel,
} from "./peer-certificate-renewer.js";
export {
  DEFAULT_RENEW_FRACTION,
  decidePeerCertificate,
  PEER_CERTIFICATE_SECONDS_ANNOTATION,
  PEER_RENEW_FRACTION_ANNOTATION,
  PEER_USERNAME_PREFIX,
  renewalSchedule,
} from "./peer-certificates.js";
export { type PeerClient, PeerClients } from "./peer-clients.js";
export {
  type ClusterLabelSource,
  capacitySummary,
  PeeringController,
  type PeeringControllerOptions,
} from "./peering-controller.js";
export {
  ORIGIN_UID_ANNOTATION,
  REFLECTED_CONDITION,
} from "./reflection/labels.js";
export {
  isReflected,
  REFLECTED_KINDS,
  type ReflectedKind,
  reflectedCopy,
  remoteServiceSpec,
} from "./reflection/object-translation.js";
export {
  pendingStatus,
  reflectedStatus,
  remoteNodeAffinity,
  remotePod,
  remotePodSpec,
} from "./reflection/pod-translation.js";
export {
  ReflectionController,
  type ReflectionControllerOptions,
} from "./reflection/reflection-controller.js";
export { KUBECONFIG_KEY, type ProbeResult, probeReadyz } from "./remote.js";
export {
  ReplicatedDeploymentController,
  type ReplicationControllerOptions,
} from "./replication/index.js";
export {
  andTerms,
  intersectSelectors,
  labelSelectorMatches,
  requirementMatches,
  selectorMatches,
  termMatches,
} from "./selectors.js";
export {
  NODE_LEASE_NAMESPACE,
  NODE_TYPE_LABEL,
  PEERING_LABEL,
  REMOTE_CLUSTER_ID_LABEL,
  VIRTUAL_NODE_TAINT,
  VIRTUAL_NODE_TYPE,
  virtualNodeName,
} from "./virtual-node.js";
