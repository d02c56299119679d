export {
  ADMISSION_URL,
  AdmissionCapability,
  type AdmissionOptions,
  type AdmissionSource,
  SERVING_CERTIFICATE,
  ServingCertificate,
  WebhookCertificateCapability,
  type WebhookCertificateOptions,
} from "./capability.js";
export {
  type WebhookCertificateIssuer,
  WebhookCertificateKeeper,
  type WebhookCertificateKeeperOptions,
} from "./certificate-keeper.js";
export {
  applyWebhookConfigurations,
  deleteWebhookConfigurations,
  EXEMPT_NAMESPACES,
  NOT_NAMESPACE_BOOTSTRAP,
  privilegedConfigurationName,
  privilegedRequester,
  WEBHOOK_CONFIGURATION,
  type WebhookEndpoint,
  webhookConfigurations,
} from "./configuration.js";
export {
  type AdmissionCheck,
  type AdmissionEntriesOptions,
  admissionEntries,
  checkLabel,
  oncePerRequest,
  SHARED_ENTRIES,
  tenantKey,
  tenantOfNamespaceKey,
} from "./dispatcher.js";
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
  type WebhookCallers,
  WebhookServer,
  type WebhookServerOptions,
} from "./server.js";
export {
  awaitWebhookTls,
  DEFAULT_RENEW_BEFORE_DAYS,
  ensureWebhookTls,
  readWebhookTls,
  WEBHOOK_TLS_SECRET,
  type WebhookTls,
  type WebhookTlsOptions,
} from "./tls.js";
