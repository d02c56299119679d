export { MONITOR_CRDS, MONITOR_RULE_CRD } from "./api/crds.js";
export {
  type Alert,
  CONDITIONS_OF,
  MONITOR_CONDITIONS,
  MONITOR_LIMITS,
  MONITORED_KINDS,
  type MonitorCondition,
  type MonitoredKind,
  type MonitorRule,
  MonitorRuleSchema,
  type MonitorRuleSpec,
  REMEDIATIONS,
} from "./api/monitor-rule.js";
export { MonitorCapability, type MonitorCapabilityOptions } from "./capability.js";
export { evaluateTimed, type Verdict } from "./conditions.js";
export { MonitorMetrics } from "./metrics.js";
export {
  ALERT_FIRING_REASON,
  ALERT_RESOLVED_REASON,
  MONITOR_COMPONENT,
  Monitor,
  type MonitorOptions,
  REMEDIATION_FAILED_REASON,
  REMEDIATION_REASON,
} from "./monitor.js";
export {
  type AlertNotification,
  DELIVERY_HEADER,
  SIGNATURE_HEADER,
  signBody,
  verifySignature,
  WebhookNotifier,
} from "./notifier.js";
export { renderEndpointUrl } from "./probe.js";
