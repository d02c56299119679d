import type { V1Secret } from "@kubernetes/client-node";
import { type Static, Type } from "@sinclair/typebox";
import type { Logger } from "pino";
import { parse } from "yaml";
import { type JSONSchemaProps, SchemaValidator } from "../apis/index.js";
import { type ClusterClient, Informer, silentLogger } from "../kube/index.js";
import type { Authenticator } from "./authenticator.js";
import { KeystoneIdentityProvider } from "./providers/keystone.js";
import { OidcIdentityProvider } from "./providers/oidc.js";
import type { IdentityProvider } from "./providers/provider.js";

export const PROVIDER_CONFIG_SECRET = "tenantry-identity-providers";
export const PROVIDER_CONFIG_KEY = "providers.yaml";

const Url = Type.String({ minLength: 1, maxLength: 2048, pattern: "^https?://" });
const Name = Type.String({ minLength: 1, maxLength: 256 });

export const ProviderConfigSchema = Type.Object(
  {
    keystone: Type.Optional(
      Type.Object(
        {
          url: Url,
          service: Type.Object(
            {
              username: Name,
              password: Type.String({ minLength: 1, maxLength: 1024 }),
              domain: Type.Optional(Name),
              project: Type.Optional(Name),
              projectDomain: Type.Optional(Name),
            },
            { additionalProperties: false },
          ),
          adminRoles: Type.Optional(Type.Array(Name, { maxItems: 16 })),
          timeoutMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 60_000 })),
          usernamePrefix: Type.Optional(Type.String({ maxLength: 64 })),
        },
        { additionalProperties: false },
      ),
    ),
    oidc: Type.Optional(
      Type.Array(
        Type.Object(
          {
            issuer: Url,
            audience: Name,
            caPem: Type.Optional(Type.String({ maxLength: 65536 })),
            prefix: Type.Optional(Type.String({ maxLength: 64 })),
            adminGroups: Type.Optional(Type.Array(Name, { maxItems: 64 })),
            claims: Type.Optional(
              Type.Object(
                {
                  username: Type.Optional(Name),
                  groups: Type.Optional(Name),
                  tenant: Type.Optional(Name),
                  tenantAdmin: Type.Optional(Name),
                },
                { additionalProperties: false },
              ),
            ),
          },
          { additionalProperties: false },
        ),
        { maxItems: 8 },
      ),
    ),
  },
  { additionalProperties: false },
);
export type ProviderConfig = Static<typeof ProviderConfigSchema>;

const validator = new SchemaValidator<ProviderConfig>(ProviderConfigSchema as unknown as JSONSchemaProps);

/** Parses and validates `providers.yaml`; throws naming every field that is wrong. */
export function parseProviderConfig(text: string): ProviderConfig {
  const value = (parse(text) ?? {}) as unknown;
  const violations = validator.violations(value);
  if (violations.length) {
    throw new Error(
      `${PROVIDER_CONFIG_KEY} is invalid: ${violations.map((v) => `${v.field}: ${v.message}`).join("; ")}`,
    );
  }
  return value as ProviderConfig;
}

export function providersFromConfig(config: ProviderConfig): IdentityProvider[] {
  return [
    ...(config.keystone ? [new KeystoneIdentityProvider(config.keystone)] : []),
    ...(config.oidc ?? []).map((o) => new OidcIdentityProvider(o)),
  ];
}

export interface ProviderConfigWatchOptions {
  client: ClusterClient;
  namespace: string;
  authenticator: Authenticator;
  /** Providers that are always there (the built-in one); configured ones come after them. */
  fixed: IdentityProvider[];
  logger?: Logger;
}

/**
 * External identity providers (Keystone, OIDC) configured at run time through the Secret
 * `tenantry-identity-providers` (key `providers.yaml`; it holds Keystone's service password).
 * A change takes effect within seconds; an invalid one is logged with the field at fault and the
 * previous configuration stays in force.
 */
export class ProviderConfigWatch {
  private readonly informer: Informer<V1Secret>;
  private readonly logger: Logger;
  private applied = "";
  /** The last error, if the Secret's current content is refused. */
  lastError?: string;

  constructor(private readonly options: ProviderConfigWatchOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "identity-providers" });
    this.informer = Informer.forResource<V1Secret>(options.client, {
      apiVersion: "v1",
      kind: "Secret",
      namespace: options.namespace,
      fieldSelector: `metadata.name=${PROVIDER_CONFIG_SECRET}`,
    });
    this.informer.addHandler({
      onAdd: () => this.reload(),
      onUpdate: () => this.reload(),
      onDelete: () => this.reload(),
    });
  }

  async start(): Promise<void> {
    this.informer.start();
    await this.informer.waitForSync({ timeoutMs: 60_000 });
    this.reload();
  }

  async stop(): Promise<void> {
    await this.informer.stop();
  }

  private reload(): void {
    const secret = this.informer.get(this.options.namespace, PROVIDER_CONFIG_SECRET);
    const raw = secret?.data?.[PROVIDER_CONFIG_KEY];
    const text = raw ? Buffer.from(raw, "base64").toString() : "";
    if (text === this.applied) return;
    try {
      const providers = providersFromConfig(parseProviderConfig(text));
      this.options.authenticator.setProviders([...this.options.fixed, ...providers]);
      this.applied = text;
      this.lastError = undefined;
      this.logger.info(
        { providers: this.options.authenticator.providers.map((p) => p.name) },
        "identity providers configured",
      );
    } catch (err) {
      this.lastError = (err as Error).message;
      this.logger.error(
        { err: this.lastError },
        "identity provider configuration refused; keeping the previous one",
      );
    }
  }
}
