export {
  APPLIED_DIGEST_ANNOTATION,
  type ApplyOptions,
  applyIfChanged,
  applyObject,
  applyStatus,
  applyStatusUnlessGone,
  FIELD_MANAGER,
  holdsFields,
  isApplied,
  sameStoredJson,
  withAppliedDigest,
} from "./apply.js";
export {
  DEFAULT_RECONNECT_BACKOFF,
  exponentialDelay,
  type JitteredBackoffOptions,
  jitteredBackoffDelay,
} from "./backoff.js";
export { CachedInformers, componentCache, InformerCache, resourceKey } from "./cache.js";
export {
  CERTIFICATE_EXPIRY_METRIC,
  type CertificateEventTarget,
  certificateExpiryGauge,
  recordCertificateEvent,
  recordEvent,
} from "./certificate-expiry.js";
export {
  CLIENT_USAGES,
  type ClientCertificateRequest,
  clientCertificateRequest,
  KUBE_APISERVER_CLIENT_SIGNER,
  waitForIssuedCertificate,
} from "./certificate-requests.js";
export {
  ClusterClient,
  inClusterNamespace,
  loadClusterClient,
  loadInClusterClient,
  qualifyUserNames,
} from "./clients.js";
export { type CancelTimer, type Clock, flushAsync, ManualClock, sleep, systemClock } from "./clock.js";
export {
  type Condition,
  type ConditionStatus,
  type ConditionUpdate,
  findCondition,
  formatKubeTime,
  isFalse,
  isTrue,
  removeCondition,
  setCondition,
} from "./conditions.js";
export {
  Controller,
  type ControllerOptions,
  type ControllerStats,
  changedBeyondStatus,
  type KeyMapper,
  ownKey,
  type ReconcileContext,
  type ReconcileResult,
  type Reconciler,
  reconcileDone,
  requeueAfter,
  runningControllers,
  type StopOptions,
  terminalError,
} from "./controller.js";
export { registerControllerMetrics } from "./controller-metrics.js";
export { withRequestDeadline } from "./deadline.js";
export {
  describeError,
  ignoreNotFound,
  isAlreadyExists,
  isConflict,
  isGone,
  isNotFound,
  isTransportError,
  type KubeStatus,
  rootCause,
  statusCode,
  statusOf,
  statusReason,
} from "./errors.js";
export {
  cacheHasCaughtUp,
  Expectations,
  type ExpectationsOptions,
  resourceVersionOf,
} from "./expectations.js";
export {
  addFinalizer,
  type FinalizerWriter,
  hasFinalizer,
  removeFinalizer,
  setFinalizer,
} from "./finalizers.js";
export {
  cacheKey,
  cacheKeyOf,
  diffSnapshot,
  type IndexFunction,
  Informer,
  type InformerEventOrigin,
  type InformerHandler,
  type InformerOptions,
  type InformerStats,
  runningWatches,
  type SnapshotDiff,
  startInformers,
  stopInformers,
  WatchEventError,
} from "./informer.js";
export {
  type KubeconfigCluster,
  type KubeconfigContext,
  type KubeconfigUser,
  kubeconfigYaml,
  mergedKubeconfigYaml,
  usersOnlyKubeconfigYaml,
} from "./kubeconfig.js";
export {
  acquiredRecord,
  KubeLeaseStore,
  LeaderElector,
  type LeaderElectorOptions,
  type LeaseRecord,
  type LeaseStore,
  type LeaseTimings,
  leaseRecordFrom,
  leaseSpecFrom,
  releasedRecord,
  type StoredLease,
  shouldAcquire,
  validateLeaseTimings,
} from "./leader-election.js";
export { Lifecycle, type Stoppable } from "./lifecycle.js";
export {
  KubeListWatch,
  type ListResult,
  type ListWatchSource,
  type RawWatchEvent,
  type ResourceSelector,
  WatchAbortedError,
  type WatchHandle,
} from "./list-watch.js";
export { silentLogger } from "./logging.js";
export {
  allStarted,
  type Capability,
  type Drainable,
  type Elector,
  type LeaderControllers,
  type LeadershipCallbacks,
  type ManagedContext,
  Manager,
  Provided,
  type Runnable,
  type SharedContext,
  Slot,
  type Started,
  StartedState,
  withDependencies,
} from "./manager.js";
export { isDnsLabel, readNamespaceIfExists } from "./names.js";
export { DynamicObjectApi, type SubresourcePatchOptions } from "./object-api.js";
export {
  type ControllerRateLimiterOptions,
  defaultControllerRateLimiter,
  type ExponentialBackoffOptions,
  ItemExponentialRateLimiter,
  MaxOfRateLimiter,
  type RateLimiter,
  type TokenBucketOptions,
  TokenBucketRateLimiter,
} from "./ratelimit.js";
export {
  type ObjectRef,
  objectKey,
  type Priority,
  parseObjectKey,
  WorkQueue,
  type WorkQueueOptions,
} from "./workqueue.js";
