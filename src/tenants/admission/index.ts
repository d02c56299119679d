import type { AdmissionWebhook } from "../../webhooks/index.js";
import type { TenantInformers } from "../informers.js";

/** Every admission webhook of the tenants capability, quota aside (see quota/admission.ts). */
export function tenantWebhooks(_informers: TenantInformers): AdmissionWebhook[] {
  return [];
}
