export {
  applyWebhookConfigurations,
  deleteWebhookConfigurations,
  EXEMPT_NAMESPACES,
  NOT_NAMESPACE_BOOTSTRAP,
  privilegedConfigurationName,
  privilegedRequester,
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
export {
  type AdmissionWebhook,
  OPENAPI_PATH as WEBHOOKS_OPENAPI_PATH,
  WebhookServer,
  type WebhookServerOptions,
} from "./server.js";
export { ensureWebhookTls, type WebhookTls, type WebhookTlsOptions } from "./tls.js";
