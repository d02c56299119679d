/**
 * What the HTTP and executable transports share: the wire form of the callouts (JSON request in,
 * JSON reply out, flex-volume style `status`/`message` envelope) and the checking of replies, so
 * that a plugin answering nonsense fails with a message naming the field instead of reaching the
 * cluster.
 */
import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { formatViolations, SchemaValidator, StringEnum, toOpenApiSchema } from "../../apis/index.js";
import {
  CALLOUTS,
  type Callout,
  type CheckServiceRequest,
  type CheckServiceResult,
  type DeployServiceRequest,
  type DeployServiceResult,
  type ImageList,
  type ImageSpec,
  PluginError,
  type PluginInitResult,
  type RuntimeRegistration,
  type ServicePlugin,
} from "./spi.js";

/** Reply statuses, as flex-volume drivers answer. A reply without one succeeded. */
export const REPLY_STATUSES = ["Success", "Failure", "Not supported"] as const;

/** Longest message of a plugin kept in errors (and so in a Runtime's status). */
const MAX_MESSAGE = 4000;

const Envelope = {
  status: Type.Optional(StringEnum(REPLY_STATUSES, { description: "How the callout went." })),
  message: Type.Optional(Type.String({ description: "Why, for people." })),
};

const ImageListReply = Type.Object(
  { ...Envelope, images: Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { maxItems: 64 }) },
  {},
);

/** The reply each callout must give (beyond the envelope). */
export const REPLY_SCHEMAS = {
  init: Type.Object(
    {
      ...Envelope,
      capabilities: Type.Array(StringEnum(CALLOUTS, { description: "A callout the plugin implements." }), {
        maxItems: 16,
      }),
    },
    {},
  ),
  "deploy-service": Type.Object(
    {
      ...Envelope,
      yaml: Type.String({ minLength: 1, maxLength: 1_048_576 }),
      endpoint: Type.Optional(
        Type.Object({
          port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
          path: Type.Optional(Type.String({ maxLength: 1024, pattern: "^(/.*)?$" })),
        }),
      ),
    },
    {},
  ),
  "check-service": Type.Object(
    {
      ...Envelope,
      compatible: Type.Boolean(),
      field: Type.Optional(Type.String({ maxLength: 256 })),
    },
    {},
  ),
  "deregister-service": Type.Object(Envelope, {}),
  "image-pull": ImageListReply,
  "image-cleanup": ImageListReply,
} satisfies Record<Callout, TSchema>;

type Reply<C extends Callout> = Static<(typeof REPLY_SCHEMAS)[C]>;

const validators = new Map<Callout, SchemaValidator<unknown>>();
function validatorOf(callout: Callout): SchemaValidator<unknown> {
  let validator = validators.get(callout);
  if (!validator) {
    validator = new SchemaValidator(toOpenApiSchema(REPLY_SCHEMAS[callout]));
    validators.set(callout, validator);
  }
  return validator;
}

/** A plugin's text, cut to what a status can hold. */
export function clip(text: string): string {
  const trimmed = text.trim();
  return trimmed.length > MAX_MESSAGE ? `${trimmed.slice(0, MAX_MESSAGE)}…` : trimmed;
}

/**
 * The reply checked: a `Failure` or `Not supported` status, or a reply not of the callout's shape,
 * is a PluginError naming what was wrong.
 */
export function checkReply<C extends Callout>(callout: C, reply: unknown): Reply<C> {
  if (!reply || typeof reply !== "object" || Array.isArray(reply)) {
    throw new PluginError(callout, `answered ${clip(JSON.stringify(reply) ?? "nothing")}, not a JSON object`);
  }
  const { status, message } = reply as { status?: unknown; message?: unknown };
  if (status === "Failure") {
    throw new PluginError(callout, typeof message === "string" && message ? clip(message) : "failed");
  }
  if (status === "Not supported") throw new PluginError(callout, "not supported by this plugin");
  const violations = validatorOf(callout).violations(reply);
  if (violations.length) {
    throw new PluginError(callout, `answered an invalid reply: ${clip(formatViolations(violations))}`);
  }
  return reply as Reply<C>;
}

/** Sends one callout's JSON request and resolves with its JSON reply (or rejects with a PluginError). */
export type CalloutTransport = (callout: Callout, request: unknown) => Promise<unknown>;

/** A plugin reached through a transport: every callout's request and reply as JSON. */
export class RemotePlugin implements ServicePlugin {
  constructor(private readonly transport: CalloutTransport) {}

  private async call<C extends Callout>(callout: C, request: unknown): Promise<Reply<C>> {
    return checkReply(callout, await this.transport(callout, request));
  }

  async init(): Promise<PluginInitResult> {
    const reply = await this.call("init", {});
    return { capabilities: [...new Set(reply.capabilities)] };
  }

  async deployService(request: DeployServiceRequest): Promise<DeployServiceResult> {
    const reply = await this.call("deploy-service", request);
    return { yaml: reply.yaml, ...(reply.endpoint ? { endpoint: reply.endpoint } : {}) };
  }

  async checkService(request: CheckServiceRequest): Promise<CheckServiceResult> {
    const reply = await this.call("check-service", request);
    if (reply.compatible) return { compatible: true };
    return {
      compatible: false,
      field: reply.field ?? "config",
      message: clip(reply.message ?? "the plugin finds it incompatible with the existing runtime"),
    };
  }

  async deregisterService(registration: RuntimeRegistration): Promise<void> {
    await this.call("deregister-service", { registration });
  }

  async imagePull(spec: ImageSpec): Promise<ImageList> {
    return { images: (await this.call("image-pull", spec)).images };
  }

  async imageCleanup(spec: ImageSpec): Promise<ImageList> {
    return { images: (await this.call("image-cleanup", spec)).images };
  }
}
