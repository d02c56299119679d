export { errorMessage, UserError } from "./errors.js";
export {
  DEFAULT_DRAIN_TIMEOUT_MS,
  drainingServerOptions,
  type GracefulClose,
  gracefulClose,
} from "./graceful-close.js";
export { API_SERVER_KEEP_ALIVE_MS } from "./keep-alive.js";
export { nodeProgram } from "./node-program.js";
export { answerOversizedBodies } from "./oversized-body.js";
export { cacheRoot, defaultClustersDir } from "./paths.js";
export { createProgress, type Progress } from "./progress.js";
export {
  addAmounts,
  formatQuantity,
  parseQuantity,
  QuantityError,
  type ResourceAmounts,
  type ResourceList,
  type ResourceListInput,
  toAmounts,
  toResourceList,
} from "./quantity.js";
export { echoRequestId, REQUEST_ID_HEADER, requestIdOptions } from "./request-id.js";
export { replaceServingCertificate } from "./serving-certificate.js";
