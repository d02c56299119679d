export { errorMessage, UserError } from "./errors.js";
export { EventStream, type EventStreamOptions } from "./event-stream.js";
export { DEFAULT_DRAIN_TIMEOUT_MS } from "./graceful-close.js";
export { connectionListed, HOP_BY_HOP_HEADERS } from "./hop-by-hop.js";
export {
  type FastifyShellOptions,
  HttpServer,
  type HttpServerOptions,
  type InFlightOnStop,
  type ServingTls,
} from "./http-server.js";
export { API_SERVER_KEEP_ALIVE_MS } from "./keep-alive.js";
export { nodeProgram } from "./node-program.js";
export { cacheRoot, defaultClustersDir } from "./paths.js";
export { type PollOptions, pollUntil } from "./poll.js";
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
  replyProblem,
  routeNotFound,
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
export { REQUEST_ID_HEADER } from "./request-id.js";
