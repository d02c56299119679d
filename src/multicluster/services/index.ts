/** Multi-Cluster Services (KEP-1645) for offloaded namespaces. */
export { type AddressMapper, unmappedAddresses } from "./addresses.js";
export { multiclusterServicesChecks } from "./admission.js";
export { MulticlusterServicesController, type MulticlusterServicesOptions } from "./controller.js";
export { DERIVED_FROM_IMPORT_LABEL, derivedServiceName, MCS_MANAGED_BY } from "./plan.js";
export { MCS_CLUSTER_ROLES } from "./roles.js";
export { RESOURCES as MCS_VIEW_RESOURCES, type ViewInformers } from "./views.js";
export { NOT_OFFLOADED_REASON } from "./writer.js";
