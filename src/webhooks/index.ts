export {
  applyWebhookConfigurations,
  deleteWebhookConfigurations,
  EXEMPT_NAMESPACES,
  type WebhookEndpoint,
  webhookConfigurations,
} from "./configuration.js";
export {
  type AdmissionDecision,
  type AdmissionRequest,
  allow,
  deny,
  type JsonPatchOperation,
  pointerSegment,
  setLabelsPatch,
} from "./review.js";
export { type AdmissionWebhook, WebhookServer, type WebhookServerOptions } from "./server.js";
export { ensureWebhookTls, type WebhookTls, type WebhookTlsOptions } from "./tls.js";
