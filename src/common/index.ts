export { errorMessage, UserError } from "./errors.js";
export {
  DEFAULT_DRAIN_TIMEOUT_MS,
  drainingServerOptions,
  type GracefulClose,
  gracefulClose,
} from "./graceful-close.js";
export { API_SERVER_KEEP_ALIVE_MS } from "./keep-alive.js";
export { nodeProgram } from "./node-program.js";
export { cacheRoot, defaultClustersDir } from "./paths.js";
export {
  answerClientError,
  clientErrorProblem,
  PROBLEM_CONTENT_TYPE,
  type Problem,
  ProblemError,
  type ProblemMembers,
  ProblemSchema,
  problemOf,
  sendProblem,
  statusTitle,
  writeProblemToSocket,
} from "./problem.js";
export {
  discardRest,
  MAX_PARAM_LENGTH,
  OVERSIZED_BODY_DISCARD_BYTES,
  OVERSIZED_BODY_DISCARD_MS,
  type ProblemHandling,
  type ProblemServerLimits,
  problemServerOptions,
  replyProblem,
  routeNotFound,
  serveProblems,
  type ValidationIssue,
  validationProblem,
} from "./problem-server.js";
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
