/** The tenants capability (Tenant, NamespaceTemplate, TenantResourceQuota): its only public entry. */
export * from "./api/index.js";
