/** The environment of runtime pods' containers, and what the runtime agent sidecar reads of it. */

/** Environment every runtime container gets. */
export const AGENT_ENV = {
  tokenFile: "TENANTRY_AGENT_TOKEN_FILE",
  stopUrl: "TENANTRY_STOP_URL",
  runtime: "TENANTRY_RUNTIME",
} as const;

/** The runtime agent's sidecar container (RuntimeService `spec.agent`). */
export const AGENT_CONTAINER = "tenantry-agent";

/** What the agent sidecar gets besides {@link AGENT_ENV}. */
export const AGENT_SIDECAR_ENV = {
  podIp: "TENANTRY_POD_IP",
  reportUrl: "TENANTRY_ACTIVITY_REPORT_URL",
  sourceUrl: "TENANTRY_ACTIVITY_SOURCE_URL",
  sourceField: "TENANTRY_ACTIVITY_FIELD",
  sourceToken: "TENANTRY_ACTIVITY_TOKEN",
  periodSeconds: "TENANTRY_AGENT_PERIOD_SECONDS",
} as const;
