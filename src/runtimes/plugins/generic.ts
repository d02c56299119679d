/**
 * The built-in `generic` plugin: any container image as a runtime. Parameters: image, port,
 * command, args, env, cpu, memory, volumeSize (a PersistentVolumeClaim mounted at mountPath),
 * storageClassName, readinessProbe/readinessPath, servesUnderBasePath. Its
 * container gets a readiness probe on the port, so "Ready" means "answering".
 */
import { type Static, Type } from "@sinclair/typebox";
import { stringify } from "yaml";
import { DnsSubdomain, Quantity, SchemaValidator, StringEnum, toOpenApiSchema } from "../../apis/index.js";
import { parseQuantity, QuantityError } from "../../common/index.js";
import type {
  CheckServiceRequest,
  CheckServiceResult,
  ConfigViolation,
  DeployServiceRequest,
  DeployServiceResult,
  ImageList,
  ImageSpec,
  PluginInitResult,
  ServicePlugin,
} from "./spi.js";
import { PluginError } from "./spi.js";

/** An image reference: registry host (and port), path, tag and/or digest. */
export const IMAGE_PATTERN =
  "^[a-z0-9]([a-z0-9._-]*[a-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$";
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
/** Environment variables tenantry sets itself. */
const RESERVED_ENV_PREFIX = "TENANTRY_";

/** Upper bounds of the quantities a runtime may ask for. */
export const GENERIC_LIMITS = { cpu: "16", memory: "64Gi", volumeSize: "1Ti" } as const;
export const GENERIC_DEFAULTS = {
  port: 8080,
  cpu: "250m",
  memory: "256Mi",
  mountPath: "/data",
  readinessProbe: "http",
  readinessPath: "/",
} as const;

export const GenericConfigSchema = Type.Object({
  image: Type.String({
    description: "The container image, e.g. `docker.io/jmalloc/echo-server:0.3.7`.",
    minLength: 1,
    maxLength: 512,
    pattern: IMAGE_PATTERN,
  }),
  port: Type.Optional(
    Type.Integer({ description: "Port the container serves HTTP on.", minimum: 1, maximum: 65535 }),
  ),
  command: Type.Optional(
    Type.Array(Type.String({ description: "An argument.", maxLength: 4096 }), {
      description: "Replaces the image's entrypoint.",
      maxItems: 16,
    }),
  ),
  args: Type.Optional(
    Type.Array(Type.String({ description: "An argument.", maxLength: 4096 }), {
      description: "Arguments to the entrypoint.",
      maxItems: 64,
    }),
  ),
  env: Type.Optional(
    Type.Record(Type.String(), Type.String({ description: "The value.", maxLength: 32768 }), {
      description: "Environment variables.",
      maxProperties: 64,
    }),
  ),
  cpu: Type.Optional(Quantity(`CPU requested and limited to (at most ${GENERIC_LIMITS.cpu}).`)),
  memory: Type.Optional(Quantity(`Memory requested and limited to (at most ${GENERIC_LIMITS.memory}).`)),
  volumeSize: Type.Optional(
    Quantity(`Size of a persistent volume for the runtime's data (at most ${GENERIC_LIMITS.volumeSize}).`),
  ),
  mountPath: Type.Optional(
    Type.String({ description: "Where the volume is mounted.", maxLength: 1024, pattern: "^/" }),
  ),
  storageClassName: Type.Optional(DnsSubdomain({ description: "StorageClass of the volume." })),
  readinessProbe: Type.Optional(
    StringEnum(["http", "tcp"], { description: "http: a GET on readinessPath; tcp: a connection." }),
  ),
  readinessPath: Type.Optional(
    Type.String({ description: "Path of the readiness GET.", maxLength: 1024, pattern: "^/" }),
  ),
  servesUnderBasePath: Type.Optional(
    Type.Boolean({
      description:
        "The image serves under the route's base path (TENANTRY_BASE_PATH) rather than at its root.",
    }),
  ),
});
export type GenericConfig = Static<typeof GenericConfigSchema>;

const KNOWN = Object.keys(GenericConfigSchema.properties);
/** Parameters a running runtime cannot change; a stopped one keeps its volume, so those stay. */
const VOLUME_FIELDS = ["volumeSize", "mountPath", "storageClassName"] as const;

let validator: SchemaValidator<GenericConfig> | undefined;

/** Every problem with a generic runtime's parameters, each naming the field and the limit. */
export function validateGenericConfig(config: Record<string, unknown>): ConfigViolation[] {
  validator ??= new SchemaValidator<GenericConfig>(toOpenApiSchema(GenericConfigSchema));
  const violations: ConfigViolation[] = validator
    .violations(config)
    .map((v) => ({ field: v.field, message: `${v.field}: ${v.message}` }));
  for (const field of Object.keys(config)) {
    if (!KNOWN.includes(field)) {
      violations.push({
        field,
        message: `${field}: not a parameter of the generic plugin (it takes ${KNOWN.join(", ")})`,
      });
    }
  }
  for (const [field, limit] of Object.entries(GENERIC_LIMITS)) {
    const value = config[field];
    if (value === undefined || violations.some((v) => v.field === field)) continue;
    try {
      const amount = parseQuantity(value as string | number);
      if (amount <= 0n) violations.push({ field, message: `${field}: must be more than 0`, limit: "0" });
      else if (amount > parseQuantity(limit)) {
        violations.push({
          field,
          message: `${field}: ${JSON.stringify(value)} is more than the limit ${limit}`,
          limit,
        });
      }
    } catch (err) {
      if (!(err instanceof QuantityError)) throw err;
      violations.push({ field, message: `${field}: ${err.message}` });
    }
  }
  for (const name of Object.keys((config.env as Record<string, unknown> | undefined) ?? {})) {
    if (!ENV_NAME.test(name)) {
      violations.push({
        field: `env.${name}`,
        message: `env.${name}: not a valid environment variable name (letters, digits, '_', '-', '.'; not starting with a digit)`,
      });
    } else if (name.startsWith(RESERVED_ENV_PREFIX)) {
      violations.push({
        field: `env.${name}`,
        message: `env.${name}: names starting with ${RESERVED_ENV_PREFIX} are set by tenantry`,
      });
    }
  }
  if (config.volumeSize === undefined) {
    for (const field of ["mountPath", "storageClassName"]) {
      if (config[field] !== undefined) {
        violations.push({ field, message: `${field}: only with volumeSize (no volume is asked for)` });
      }
    }
  }
  return violations;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export class GenericPlugin implements ServicePlugin {
  async init(): Promise<PluginInitResult> {
    return { capabilities: ["deploy-service", "check-service", "image-pull", "image-cleanup"] };
  }

  validateConfig(config: Record<string, unknown>): ConfigViolation[] {
    return validateGenericConfig(config);
  }

  async checkService(request: CheckServiceRequest): Promise<CheckServiceResult> {
    const { current, proposed } = request;
    const fields = request.state === "Running" ? KNOWN : VOLUME_FIELDS;
    for (const field of fields) {
      if (same(current[field], proposed[field])) continue;
      return {
        compatible: false,
        field,
        message:
          request.state === "Running"
            ? `${field} is ${JSON.stringify(proposed[field] ?? null)} in the request but the running runtime has ${JSON.stringify(current[field] ?? null)}; stop it first to change it`
            : `${field} is ${JSON.stringify(proposed[field] ?? null)} in the request but the runtime's volume was made with ${JSON.stringify(current[field] ?? null)}; delete the runtime to change it`,
      };
    }
    return { compatible: true };
  }

  async deployService(request: DeployServiceRequest): Promise<DeployServiceResult> {
    const violations = validateGenericConfig(request.config);
    if (violations.length)
      throw new PluginError("deploy-service", violations.map((v) => v.message).join("; "));
    const config = request.config as GenericConfig;
    const { registration } = request;
    const { name, namespace } = registration;
    const port = config.port ?? GENERIC_DEFAULTS.port;
    const labels = { "app.kubernetes.io/name": registration.service, "app.kubernetes.io/instance": name };
    const claim = `${name}-data`;
    const env: Record<string, string> = {
      PORT: String(port),
      ...(config.env ?? {}),
      TENANTRY_BASE_PATH: registration.basePath,
    };
    const resources = {
      cpu: String(config.cpu ?? GENERIC_DEFAULTS.cpu),
      memory: String(config.memory ?? GENERIC_DEFAULTS.memory),
    };
    const probe =
      (config.readinessProbe ?? GENERIC_DEFAULTS.readinessProbe) === "tcp"
        ? { tcpSocket: { port } }
        : { httpGet: { path: config.readinessPath ?? GENERIC_DEFAULTS.readinessPath, port } };
    const objects: object[] = [];
    if (config.volumeSize !== undefined) {
      objects.push({
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: claim, namespace, labels },
        spec: {
          accessModes: ["ReadWriteOnce"],
          resources: { requests: { storage: String(config.volumeSize) } },
          ...(config.storageClassName ? { storageClassName: config.storageClassName } : {}),
        },
      });
    }
    objects.push({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: {
        name,
        namespace,
        labels,
      },
      spec: {
        replicas: 1,
        strategy: { type: "Recreate" },
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            containers: [
              {
                name: "runtime",
                image: config.image,
                ...(config.command ? { command: config.command } : {}),
                ...(config.args ? { args: config.args } : {}),
                ports: [{ name: "http", containerPort: port }],
                env: Object.entries(env).map(([k, value]) => ({ name: k, value })),
                resources: { requests: resources, limits: resources },
                readinessProbe: { ...probe, periodSeconds: 2, failureThreshold: 3 },
                ...(config.volumeSize !== undefined
                  ? {
                      volumeMounts: [
                        { name: "data", mountPath: config.mountPath ?? GENERIC_DEFAULTS.mountPath },
                      ],
                    }
                  : {}),
              },
            ],
            ...(config.volumeSize !== undefined
              ? { volumes: [{ name: "data", persistentVolumeClaim: { claimName: claim } }] }
              : {}),
          },
        },
      },
    });
    objects.push({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace, labels },
      spec: { selector: labels, ports: [{ name: "http", port, targetPort: "http" }] },
    });
    return {
      yaml: objects.map((o) => stringify(o)).join("---\n"),
      endpoint: {
        port,
        path: config.servesUnderBasePath ? registration.basePath.replace(/\/+$/, "") : "",
      },
    };
  }

  async imagePull(spec: ImageSpec): Promise<ImageList> {
    const image = spec.defaults.image;
    return { images: typeof image === "string" && new RegExp(IMAGE_PATTERN).test(image) ? [image] : [] };
  }

  async imageCleanup(spec: ImageSpec): Promise<ImageList> {
    // Nothing to keep: an image no runtime of the service asks for any more goes at once.
    return { images: spec.images };
  }
}
