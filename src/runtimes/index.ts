/** The runtimes capability (Vasilenko & Kurapati): its only public entry. */

export {
  AdminCallers,
  type Caller,
  DELEGATE_PERMISSION,
  ON_BEHALF_OF_HEADER,
  type PodCaller,
  RUNTIMES_AUDIENCE,
  RUNTIMES_DELEGATE_CLUSTER_ROLE,
  runtimesDelegateClusterRole,
} from "./admin/callers.js";
export { checkStartLimits, DEFAULT_LIMITS, isStarting } from "./admin/limits.js";
export type { RuntimeStatusBody } from "./admin/schemas.js";
export {
  type AdminRouteContext,
  type AdminRoutes,
  OPENAPI_PATH,
  RuntimesAdmin,
  type RuntimesAdminOptions,
  startRuntimesAdmin,
} from "./admin/server.js";
export { RUNTIME_CRD, RUNTIME_SERVICE_CRD, RUNTIMES_CRDS } from "./api/crds.js";
export {
  fitLabel,
  type RuntimeKey,
  type RuntimePlacement,
  runtimeNamespaceLabels,
  runtimePlacement,
  userSlug,
} from "./api/placement.js";
export {
  DESIRED_STATES,
  type DesiredState,
  MAX_ACCESS_ENTRIES,
  MAX_GROUP_NAME,
  MAX_USER_NAME,
  RUNTIME_FINALIZER,
  RUNTIME_PAUSED_ANNOTATION,
  RUNTIME_PHASES,
  RUNTIME_START_GATE_ANNOTATION,
  type Runtime,
  type RuntimeAccess,
  type RuntimePhase,
  RuntimeSchema,
  type RuntimeSpec,
  type RuntimeStatus,
  START_STEPS,
  type StartGate,
  type StartStep,
  startGateOf,
} from "./api/runtime.js";
export {
  BUILTIN_PLUGINS,
  DEFAULT_RUNTIMES_NAMESPACE,
  NAMESPACE_MODES,
  type NamespaceMode,
  type PluginRef,
  ROUTE_ACCESS,
  type RouteAccess,
  type RuntimeService,
  RuntimeServiceSchema,
  type RuntimeServiceSpec,
  type RuntimeServiceStatus,
} from "./api/runtime-service.js";
export {
  RUNTIME_BACKUPS,
  RUNTIMES,
  type RunningRuntimes,
  type RuntimeBackups,
  RuntimesCapability,
  type RuntimesOptions,
} from "./capability.js";
export { KubeconfigClients, type RuntimesCluster, SECRETS_NAMESPACE } from "./clusters.js";
export {
  AGENT_ENV,
  AGENT_SERVICE_ACCOUNT,
  ALLOWED_KINDS,
  buildManifest,
  ENDPOINT_ANNOTATION,
  ManifestError,
} from "./controller/manifest.js";
export { MIRROR_LABEL, RUNTIMES_NETWORK_POLICY } from "./controller/namespaces.js";
export {
  RuntimeController,
  type RuntimeControllerOptions,
} from "./controller/runtime-controller.js";
export {
  DEFAULT_PAUSE_IMAGE,
  prePullName,
  RuntimeServiceController,
  type RuntimeServiceControllerOptions,
  SERVICE_FINALIZER,
} from "./controller/service-controller.js";
export { RuntimesInformers } from "./informers.js";
export { ExecPlugin } from "./plugins/exec.js";
export { GENERIC_LIMITS, GenericPlugin, validateGenericConfig } from "./plugins/generic.js";
export { HttpPlugin } from "./plugins/http.js";
export { PluginRegistry } from "./plugins/registry.js";
export { REPLY_STATUSES } from "./plugins/remote.js";
export {
  CALLOUTS,
  type Callout,
  type CheckServiceRequest,
  type CheckServiceResult,
  type ConfigViolation,
  type DeployServiceRequest,
  type DeployServiceResult,
  type ImageList,
  type ImageSpec,
  PluginError,
  type PluginInitResult,
  RUNTIME_LABEL,
  RUNTIME_SERVICE_LABEL,
  type RuntimeRegistration,
  type ServicePlugin,
} from "./plugins/spi.js";
export {
  type ActivityWriter,
  KubeActivityWriter,
  PROXY_FIELD_MANAGER,
} from "./proxy/activity.js";
export type { Principal } from "./proxy/auth/access.js";
export { SESSION_COOKIE, STATE_COOKIE } from "./proxy/auth/credentials.js";
export type { HubTokenLookup } from "./proxy/auth/guard.js";
export { ensureSessionKeySecret, SESSION_KEY_SECRET } from "./proxy/auth/keys.js";
export { LOGIN_PAGE } from "./proxy/auth/login.js";
export { open as openSealed, seal } from "./proxy/auth/sealed.js";
export { forwardRequestHeaders, forwardResponseHeaders, HeaderEdits } from "./proxy/headers.js";
export { INJECT_HEADERS_MODULE } from "./proxy/modules/inject-headers.js";
export { BUILTIN_MODULES } from "./proxy/modules/registry.js";
export {
  type HookOutcome,
  type ModuleSettings,
  ModuleSettingsError,
  type ProxyRequestOptions,
  type ServiceModule,
  type ServiceModuleContext,
  type ServiceModuleFactory,
} from "./proxy/modules/spi.js";
export { PROGRESS_SEGMENT } from "./proxy/progress.js";
export { parseRoutePath, ROUTE_PREFIX, type RouteView, routeView } from "./proxy/route.js";
export {
  type AdminBackend,
  RuntimesProxy,
  type RuntimesProxyOptions,
  startRuntimesProxy,
} from "./proxy/server.js";
export {
  InformerRouteSource,
  MODULE_SECRETS_NAMESPACE,
  type RouteSource,
  type RouteSourceHandler,
  StaticRouteSource,
} from "./proxy/source.js";
