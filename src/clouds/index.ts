/** Logical clouds (ICN logical cloud, EMCO DCM): projects, logical clouds, their controller and REST API — the only public entry. */

export { CLOUDS_CRDS, LOGICAL_CLOUD_CRD, PROJECT_CRD } from "./api/crds.js";
export {
  CLOUD_STATES,
  type CloudState,
  type ClusterEntry,
  type ClusterQuota,
  type ClusterReference,
  DEPLOYED_STATES,
  type DeployedState,
  FAILURE_POLICIES,
  type LogicalCloud,
  LogicalCloudSchema,
  type LogicalCloudSpec,
  type LogicalCloudStatus,
  type UserPermission,
} from "./api/logical-cloud.js";
export { MAX_PROJECT_NAME, type Project, ProjectSchema, projectNamespace } from "./api/project.js";
export {
  cloudFromBody,
  permissionFromBody,
  projectFromBody,
  quotaFromBody,
  referenceFromBody,
} from "./api-server/bodies.js";
export {
  CLOUDS_OPENAPI_PATH,
  LogicalCloudsApi,
  type LogicalCloudsApiOptions,
  startLogicalCloudsApi,
} from "./api-server/server.js";
export { CLOUDS, CloudsCapability, type LogicalCloudsOptions, type RunningClouds } from "./capability.js";
export {
  CERTIFICATE_SECONDS,
  CLOUD_FINALIZER,
  CLUSTER_FINALIZER,
  LogicalCloudController,
  type LogicalCloudControllerOptions,
} from "./controller.js";
export { credentialsSecretName } from "./credentials.js";
export { CloudInformers } from "./informers.js";
export { LOGICAL_CLOUD_UID_LABEL, PROJECT_LABEL } from "./plan.js";
export {
  LOGICAL_CLOUDS_ADMIN_CLUSTER_ROLE,
  logicalCloudsAdminClusterRole,
  ProjectController,
} from "./projects.js";
export {
  DEFAULT_CONTAINER_LIMITS,
  DEFAULT_CONTAINER_REQUESTS,
  DEFAULT_QUOTA,
  FieldError,
  PERMISSION_VERBS,
  QUOTA_KEYS,
} from "./validation.js";
