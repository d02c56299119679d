/**
 * The service plugin SPI (Vasilenko & Kurapati, Table 3). A plugin turns a user's parameters into the
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
  /** All-in-one YAML: a Deployment (or StatefulSet), Services, PersistentVolumeClaims, Secrets, ConfigMaps. */
  yaml: string;
  /**
   * Where the runtime answers in its pod: `port` (default: the workload's first container port)
   * and `path` (default `""`: it serves at its root; the basePath without its trailing slash for a
   * service that serves under it). The endpoint URL is `http://<podIP>:<port><path>`.
   */
  endpoint?: { port?: number; path?: string };
}

export interface CheckServiceRequest {
  user: string;
  service: string;
  instance: string;
  /** The configuration the runtime runs (or last ran) with. */
  current: Record<string, unknown>;
  /** The configuration a new start request asks for. */
  proposed: Record<string, unknown>;
  /** Whether the runtime is running (every change would need a restart) or stopped (it restarts anyway). */
  state: "Running" | "Stopped";
}

export type CheckServiceResult = { compatible: true } | { compatible: false; field: string; message: string };

/** The image pull specification: the service, its default parameters and a list of images. */
export interface ImageSpec {
  service: string;
  defaults: Record<string, unknown>;
  /**
   * image-pull: the images pre-pulled now (answered with the images wanted); image-cleanup: the
   * images pre-pulled that image-pull no longer wants (answered with those to remove now).
   */
  images: string[];
}

export interface ImageList {
  images: string[];
}

/** A parameter a start request may not have, naming the field and (where there is one) the limit. */
export interface ConfigViolation {
  field: string;
  message: string;
  limit?: string | number;
}

export interface ServicePlugin {
  init(): Promise<PluginInitResult>;
  /**
   * Built-in plugins only (not a callout): the start request's parameters checked before the
   * Admin API accepts it, so that bad ones are answered 400 instead of a failed runtime.
   */
  validateConfig?(config: Record<string, unknown>): ConfigViolation[];
  deployService(request: DeployServiceRequest): Promise<DeployServiceResult>;
  checkService?(request: CheckServiceRequest): Promise<CheckServiceResult>;
  deregisterService?(registration: RuntimeRegistration): Promise<void>;
  /** The images to pre-pull on every eligible node of the runtimes cluster. */
  imagePull?(spec: ImageSpec): Promise<ImageList>;
  /** Of the images no longer wanted, those to stop pre-pulling now (the others stay a while). */
  imageCleanup?(spec: ImageSpec): Promise<ImageList>;
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
