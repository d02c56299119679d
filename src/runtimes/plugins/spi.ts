/**
 * The service plugin SPI (document 000, Table 3). A plugin turns a user's parameters into the
 * all-in-one YAML of a runtime and may take part in checks and clean-up. Transports (built in,
 * HTTP, executable) all implement {@link ServicePlugin}; one conformance suite runs against each.
 */

/** Callouts a plugin may implement; `init` and `deploy-service` are required. */
export const CALLOUTS = [
  "init",
  "deploy-service",
  "check-service",
  "deregister-service",
  "image-pull",
  "image-cleanup",
] as const;
export type Callout = (typeof CALLOUTS)[number];

/** Labels on every object a runtime's deployment creates (pods included), set by tenantry. */
export const RUNTIME_LABEL = "tenantry.dev/runtime";
export const RUNTIME_SERVICE_LABEL = "tenantry.dev/runtime-service";

export interface PluginInitResult {
  /** Callouts beyond `init` the plugin implements, e.g. `["deploy-service", "check-service"]`. */
  capabilities: Callout[];
}

/** What the plugin is told about the runtime it deploys ("runtime registration information"). */
export interface RuntimeRegistration {
  user: string;
  tenant: string;
  service: string;
  instance: string;
  /** Namespace everything must be deployed in. */
  namespace: string;
  /** Name (and name prefix) of the objects to create. */
  name: string;
  /** Cluster the runtime runs in. */
  cluster: string;
  /** Path prefix the proxy serves the runtime under, e.g. `/r/<token>/` (services that need a base URL). */
  basePath: string;
}

export interface DeployServiceRequest {
  registration: RuntimeRegistration;
  /** Runtime configuration: the start request's body over the service's defaults. */
  config: Record<string, unknown>;
}

export interface DeployServiceResult {
  /** All-in-one YAML: Deployment, Service, PersistentVolumeClaims, Secrets, ConfigMaps. */
  yaml: string;
}

export interface CheckServiceRequest {
  user: string;
  service: string;
  instance: string;
  /** The configuration the runtime runs with. */
  current: Record<string, unknown>;
  /** The configuration a new start request asks for. */
  proposed: Record<string, unknown>;
}

export type CheckServiceResult = { compatible: true } | { compatible: false; field: string; message: string };

export interface ImageSpec {
  images: string[];
}

export interface ServicePlugin {
  init(): Promise<PluginInitResult>;
  deployService(request: DeployServiceRequest): Promise<DeployServiceResult>;
  checkService?(request: CheckServiceRequest): Promise<CheckServiceResult>;
  deregisterService?(registration: RuntimeRegistration): Promise<void>;
  imagePull?(spec: ImageSpec): Promise<void>;
  imageCleanup?(spec: ImageSpec): Promise<void>;
}

/** A plugin's own failure: the runtime goes Failed with this message. */
export class PluginError extends Error {
  constructor(
    readonly callout: Callout,
    message: string,
  ) {
    super(`plugin ${callout}: ${message}`);
    this.name = "PluginError";
  }
}
